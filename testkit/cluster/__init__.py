"""Real Apache Kafka and ZooKeeper servers for tests: jars from Maven Central (:mod:`.maven`),
servers started on 127.0.0.1 and free ports, stopped after."""
