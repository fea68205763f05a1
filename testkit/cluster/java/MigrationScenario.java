// The clients' side of a ZooKeeper-to-KRaft migration scenario (KIP-866), built with the release's
// own Java clients (testkit.cluster.migration compiles it against the release's jars and runs it
// before the migration, on the ZooKeeper-mode cluster, and after it, on the KRaft one).
//
// Usage: MigrationScenario <bootstrap> before|after
//
// before: creates "orders" (3 partitions, retention.ms=86400000) and "events" (2 partitions,
//   cleanup.policy=compact), produces 30 records to every partition of both, commits for the
//   groups "g-steady", "g-moved" and "g-lost" offsets 10, 20, 30 (orders) and 5 (events).
// after: commits "g-steady" forward (orders 25 on every partition), plants the faults: "g-moved"
//   back to 4 on orders-0 (moved backwards), "g-lost"'s offsets of orders deleted
//   (deleteConsumerGroupOffsets: lost); creates "post" (1 partition) and produces 5 records.
// Both print one JSON line: the cluster's answers (describeCluster brokers and controller,
// describeTopics with topic ids, partitions, replicas, ISR, leaders, describeConfigs' topic
// configs set on the topic, listConsumerGroupOffsets of the groups, listOffsets latest).

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.PrintStream;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

public class MigrationScenario {
    static final ObjectMapper M = new ObjectMapper();
    static final List<String> GROUPS = List.of("g-steady", "g-moved", "g-lost");

    static void produce(String bootstrap, String topic, int partitions, int n) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int part = 0; part < partitions; part++)
                for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, part, "k" + i, "v" + i)).get();
        }
    }

    static Map<TopicPartition, OffsetAndMetadata> at(String topic, int partitions, long offset) {
        Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
        for (int p = 0; p < partitions; p++) m.put(new TopicPartition(topic, p), new OffsetAndMetadata(offset));
        return m;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], phase = args[1];
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "120000");
        try (Admin admin = Admin.create(ap)) {
            if (phase.equals("before")) {
                admin.createTopics(List.of(
                    new NewTopic("orders", 3, (short) 1).configs(Map.of("retention.ms", "86400000")),
                    new NewTopic("events", 2, (short) 1).configs(Map.of("cleanup.policy", "compact")))).all().get();
                produce(bootstrap, "orders", 3, 30);
                produce(bootstrap, "events", 2, 30);
                long[] orders = {10, 20, 30};
                for (int g = 0; g < GROUPS.size(); g++) {
                    Map<TopicPartition, OffsetAndMetadata> m = at("orders", 3, orders[g]);
                    m.putAll(at("events", 2, 5));
                    admin.alterConsumerGroupOffsets(GROUPS.get(g), m).all().get();
                }
            } else {
                admin.alterConsumerGroupOffsets("g-steady", at("orders", 3, 25)).all().get();
                admin.alterConsumerGroupOffsets("g-moved", Map.of(new TopicPartition("orders", 0), new OffsetAndMetadata(4))).all().get();
                Set<TopicPartition> orders = at("orders", 3, 0).keySet();
                admin.deleteConsumerGroupOffsets("g-lost", orders).all().get();
                admin.createTopics(List.of(new NewTopic("post", 1, (short) 1))).all().get();
                produce(bootstrap, "post", 1, 5);
            }
            ObjectNode answer = M.createObjectNode();
            answer.put("phase", phase);
            DescribeClusterResult dc = admin.describeCluster();
            answer.put("cluster_id", dc.clusterId().get());
            ArrayNode brokers = answer.putArray("brokers");
            for (Node n : dc.nodes().get()) brokers.addObject().put("id", n.id()).put("host", n.host()).put("port", n.port());
            Set<String> names = new TreeSet<>(admin.listTopics().names().get());
            ObjectNode topics = answer.putObject("topics");
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicDescription d : admin.describeTopics(names).allTopicNames().get().values()) {
                ObjectNode t = topics.putObject(d.name());
                t.put("topic_id", d.topicId().toString());
                ArrayNode parts = t.putArray("partitions");
                for (TopicPartitionInfo p : d.partitions()) {
                    ObjectNode pn = parts.addObject().put("partition", p.partition()).put("leader", p.leader() == null ? -1 : p.leader().id());
                    ArrayNode r = pn.putArray("replicas"); for (Node n : p.replicas()) r.add(n.id());
                    ArrayNode i = pn.putArray("isr"); for (Node n : p.isr()) i.add(n.id());
                    latest.put(new TopicPartition(d.name(), p.partition()), OffsetSpec.latest());
                }
                ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, d.name());
                ObjectNode cfg = t.putObject("configs");
                for (ConfigEntry e : admin.describeConfigs(List.of(res)).all().get().get(res).entries())
                    if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) cfg.put(e.name(), e.value());
            }
            ObjectNode ends = answer.putObject("log_end_offsets");
            admin.listOffsets(latest).all().get().forEach((tp, i) -> ends.put(tp.topic() + ":" + tp.partition(), i.offset()));
            ObjectNode groups = answer.putObject("committed");
            for (String g : GROUPS) {
                ObjectNode gn = groups.putObject(g);
                admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get()
                    .forEach((tp, om) -> { if (om != null) gn.put(tp.topic() + ":" + tp.partition(), om.offset()); });
            }
            answer.put("at", System.currentTimeMillis());
            out.println(M.writeValueAsString(answer));
        }
    }
}
