// A real HDFS for tests: Hadoop's MiniDFSCluster (hadoop-hdfs's tests jar, Maven Central), one
// namenode and one datanode in this JVM, every address on 127.0.0.1.
//
//   java -cp <hdfs bundle> HdfsMini.java BASE_DIR RPC_PORT HTTP_PORT
//
// The namenode serves the RPC protocol on RPC_PORT (hdfs://127.0.0.1:RPC_PORT) and its HTTP
// server, with the WebHDFS REST API (on by default in Hadoop 3), on HTTP_PORT; the datanode's
// ports are free ports of its own choosing. Once both answer it prints one line
// "READY hdfs://127.0.0.1:RPC_PORT http://127.0.0.1:HTTP_PORT" and runs until its standard
// input closes (the test's fixture ends it so, or by a signal), then shuts the cluster down.
import java.io.File;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

public class HdfsMini {
    public static void main(String[] args) throws Exception {
        File base = new File(args[0]);
        int rpcPort = Integer.parseInt(args[1]);
        int httpPort = Integer.parseInt(args[2]);
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getAbsolutePath());
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.namenode.http-address", "127.0.0.1:" + httpPort);
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        // WebHDFS redirects a read or write to the datanode by the name it registered with:
        // its address, not the machine's host name (which a client may not resolve)
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        conf.setBoolean("dfs.webhdfs.enabled", true);
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.setInt("dfs.replication", 1);
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base)
                .nameNodePort(rpcPort)
                .nameNodeHttpPort(httpPort)
                .numDataNodes(1)
                .format(true)
                .build();
        cluster.waitActive();
        System.out.println("READY hdfs://127.0.0.1:" + cluster.getNameNodePort()
                + " http://127.0.0.1:" + cluster.getNameNode().getHttpAddress().getPort());
        System.out.flush();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        while (System.in.read() != -1) {
            // runs until the fixture closes standard input
        }
        System.exit(0);
    }
}
