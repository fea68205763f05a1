"""The releases the cluster kit runs, as Maven bundles (name -> coordinates).

Names: ``zookeeper-<version>`` (the server and its CLI), ``kafka-<version>`` (broker, tools and
Java clients of one release). Add a release here and every test and ``make matrix`` can use it.
"""

from __future__ import annotations

ZOOKEEPER = ("3.4.14", "3.5.10", "3.6.4", "3.8.4", "3.9.3")

# what a release's server needs that its POM leaves optional: an SLF4J binding (3.5-3.7 log
# through log4j 1.2, 3.8+ through logback), Dropwizard metrics (3.6+'s default provider) and
# snappy-java (3.6+ name a snapshot through its stream class, compressed or not)
_METRICS = ("io.dropwizard.metrics:metrics-core:4.1.12.1", "org.xerial.snappy:snappy-java:1.1.10.5")
ZOOKEEPER_RUNTIME: dict[str, tuple[str, ...]] = {
    "3.5.10": ("org.slf4j:slf4j-log4j12:1.7.36",),
    "3.6.4": ("org.slf4j:slf4j-log4j12:1.7.36", *_METRICS),
    # commons-cli: TxnLogToolkit, their only reader of a txn log (LogFormatter is gone)
    "3.8.4": (*_METRICS, "commons-cli:commons-cli:1.4"),
    "3.9.3": ("ch.qos.logback:logback-classic:1.2.13", *_METRICS, "commons-cli:commons-cli:1.4"),
}

S3PROXY = "3.0.0"
# Hadoop: the HDFS minicluster of the HDFS warehouse tests (testkit/hdfs.py); the release whose
# client jars (hadoop-client-api/-runtime) Spark 4.1 ships
HADOOP = "3.4.2"

BUNDLES: dict[str, tuple[str, ...]] = {
    **{f"zookeeper-{v}": (f"org.apache.zookeeper:zookeeper:{v}", *ZOOKEEPER_RUNTIME.get(v, ())) for v in ZOOKEEPER},
    **{f"kafka-{v}": (f"org.apache.kafka:kafka_2.13:{v}", f"org.apache.kafka:kafka-tools:{v}")
       for v in ("3.9.2",)},
    # 4.x logs through Log4j 2; its POMs leave out the SLF4J binding the release's tarball ships
    **{f"kafka-{v}": (f"org.apache.kafka:kafka_2.13:{v}", f"org.apache.kafka:kafka-tools:{v}",
                      "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3")
       for v in ("4.0.2", "4.1.1", "4.2.2", "4.3.1", "4.4.0")},
    # tiered storage (KIP-405): Kafka's own test plugin LocalTieredStorage is in the storage
    # module's test jar (it uses the clients' test jar's TestUtils); 4.2+ publish no test jars
    "kafka-tiered-4.1.1": ("org.apache.kafka:kafka_2.13:4.1.1", "org.apache.kafka:kafka-tools:4.1.1",
                           "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
                           "org.apache.kafka:kafka-storage:4.1.1:test", "org.apache.kafka:kafka-clients:4.1.1:test"),
    # ZooKeeper-mode releases: 1.1 still has the old high-level consumer (kafka.consumer.*);
    # both log through Log4j 1, whose SLF4J binding their POMs leave out
    "kafka-1.1.1": ("org.apache.kafka:kafka_2.12:1.1.1", "org.slf4j:slf4j-log4j12:1.7.25"),
    "kafka-2.8.2": ("org.apache.kafka:kafka_2.13:2.8.2", "org.slf4j:slf4j-log4j12:1.7.30"),
    # MirrorMaker 2 (connect-mirror and its Connect runtime) of a release, logging through Log4j 2
    "connect-mirror-4.3.1": ("org.apache.kafka:connect-mirror:4.3.1",
                             "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3"),
    # S3Proxy: the S3-compatible server of the object-storage tests (testkit/storage.py)
    f"s3proxy-{S3PROXY}": (f"org.gaul:s3proxy:{S3PROXY}",),
    # HDFS: MiniDFSCluster is in hadoop-hdfs's tests jar, its test utilities in hadoop-common's
    f"hdfs-{HADOOP}": (f"org.apache.hadoop:hadoop-hdfs:{HADOOP}", f"org.apache.hadoop:hadoop-hdfs:{HADOOP}:tests",
                       f"org.apache.hadoop:hadoop-common:{HADOOP}", f"org.apache.hadoop:hadoop-common:{HADOOP}:tests",
                       f"org.apache.hadoop:hadoop-hdfs-client:{HADOOP}"),
}
