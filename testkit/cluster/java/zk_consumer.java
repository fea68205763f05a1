// One consumer of Kafka's old high-level consumer (kafka.javaapi.consumer, ZookeeperConsumerConnector,
// Kafka <= 1.x): its registry (/consumers/<group>/ids, owners), rebalancing and offsets (ZooKeeper, or
// Kafka with dual.commit.enabled) are the release's own code.
//
//   java -cp <kafka-1.x jars>:<this class> zk_consumer ZK GROUP CONSUMER_ID TOPIC key=value...
//
// The key=value pairs are consumer properties (offsets.storage, dual.commit.enabled,
// partition.assignment.strategy, ...). Once its streams are created (the first rebalance done) it
// prints "ready", then reads commands on stdin, one a line, and answers each with one line:
//   consume N   read up to N messages (fewer if none comes for consumer.timeout.ms):
//               "ok <count> <partition>:<next offset>..."
//   commit      commitOffsets(true): "ok"
//   close       shutdown (its ephemeral nodes go with its session): "ok", then it exits
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.ConsumerTimeoutException;
import kafka.consumer.KafkaStream;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

public class zk_consumer {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("zookeeper.connect", args[0]);
        props.put("group.id", args[1]);
        props.put("consumer.id", args[2]);
        props.put("auto.commit.enable", "false");
        props.put("auto.offset.reset", "smallest");
        props.put("consumer.timeout.ms", "1500");
        props.put("zookeeper.session.timeout.ms", "6000");
        props.put("rebalance.backoff.ms", "500");
        props.put("rebalance.max.retries", "20");
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String topic = args[3];
        ConsumerConnector consumer = kafka.consumer.Consumer.createJavaConsumerConnector(new ConsumerConfig(props));
        Map<String, List<KafkaStream<byte[], byte[]>>> streams =
            consumer.createMessageStreams(Collections.singletonMap(topic, 1));
        ConsumerIterator<byte[], byte[]> it = streams.get(topic).get(0).iterator();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            try {
                switch (cmd[0]) {
                    case "consume": {
                        int want = Integer.parseInt(cmd[1]);
                        int got = 0;
                        Map<Integer, Long> next = new TreeMap<>();
                        try {
                            while (got < want && it.hasNext()) {
                                MessageAndMetadata<byte[], byte[]> m = it.next();
                                next.put(m.partition(), m.offset() + 1);
                                got++;
                            }
                        } catch (ConsumerTimeoutException e) {
                            // nothing more came in consumer.timeout.ms
                        }
                        StringBuilder out = new StringBuilder("ok " + got);
                        for (Map.Entry<Integer, Long> e : next.entrySet()) {
                            out.append(' ').append(e.getKey()).append(':').append(e.getValue());
                        }
                        System.out.println(out);
                        break;
                    }
                    case "commit":
                        consumer.commitOffsets(true);
                        System.out.println("ok");
                        break;
                    case "close":
                        consumer.shutdown();
                        System.out.println("ok");
                        System.out.flush();
                        return;
                    default:
                        System.out.println("error unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                System.out.println("error " + e.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
        consumer.shutdown();
    }
}
