// A share-group scenario (KIP-932) on a real Kafka 4.2+ cluster, built with the release's own Java
// clients (testkit.cluster.share_streams compiles it against the release's jars).
//
// Usage: ShareScenario <bootstrap> <topic> <partitions> <records per partition> <poison partition>
//
// It creates <topic>, produces <records per partition> records to every partition (values
// "r-<partition>-<i>"; one record of <poison partition> is "poison"), then runs two share
// groups in explicit acknowledgement mode, both reading from the earliest offset:
// - "share-healthy" accepts every record;
// - "share-poison" accepts every record but releases "poison" each time it is delivered, until
//   the broker stops delivering it (the delivery count limit: the record is archived unacked).
// Both consumers stay members. The program then prints one JSON line: what it did and the
// cluster's own answers (describeShareGroups, listShareGroupOffsets, log end offsets), and waits
// for a line on stdin; it then halts without leaving the groups (the test stops the brokers
// first, so the state the brokers wrote is the state the answers describe).

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareScenario {
    static final ObjectMapper M = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]), perPartition = Integer.parseInt(args[3]);
        int poisonPartition = Integer.parseInt(args[4]);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Admin admin = Admin.create(ap);
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();

        ObjectNode did = M.createObjectNode();
        long poisonOffset = -1;
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < perPartition; i++) {
                    String value = (p == poisonPartition && i == perPartition / 2) ? "poison" : "r-" + p + "-" + i;
                    RecordMetadata md = producer.send(new ProducerRecord<>(topic, p, "k" + i, value)).get();
                    if (value.equals("poison")) poisonOffset = md.offset();
                }
            }
        }
        did.put("topic", topic);
        did.put("poison_partition", poisonPartition);
        did.put("poison_offset", poisonOffset);
        did.put("records_per_partition", perPartition);

        String[] groups = {"share-healthy", "share-poison"};
        for (String g : groups) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, g);
            admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
        }
        Map<String, KafkaShareConsumer<String, String>> consumers = new LinkedHashMap<>();
        ObjectNode deliveries = did.putObject("poison_deliveries");
        ObjectNode acceptedCounts = did.putObject("accepted");
        for (String g : groups) {
            Properties cp = new Properties();
            cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            cp.put(ConsumerConfig.GROUP_ID_CONFIG, g);
            cp.put(ConsumerConfig.CLIENT_ID_CONFIG, g + "-client");
            cp.put("share.acknowledgement.mode", "explicit");
            KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(cp, new StringDeserializer(), new StringDeserializer());
            c.subscribe(List.of(topic));
            consumers.put(g, c);
            boolean poisonGroup = g.equals("share-poison");
            Set<String> accepted = new HashSet<>();
            int poisonSeen = 0;
            long idleSince = -1, deadline = System.currentTimeMillis() + 90_000;
            // done: every other record accepted and the poison no longer delivered for 3 s
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> rec : recs) {
                    if (poisonGroup && rec.value().equals("poison")) {
                        poisonSeen++;
                        c.acknowledge(rec, AcknowledgeType.RELEASE);
                    } else {
                        accepted.add(rec.partition() + ":" + rec.offset());
                        c.acknowledge(rec, AcknowledgeType.ACCEPT);
                    }
                }
                if (!recs.isEmpty()) c.commitSync();
                int want = partitions * perPartition - (poisonGroup ? 1 : 0);
                if (accepted.size() >= want && (!poisonGroup || poisonSeen > 0)) {
                    if (recs.isEmpty()) {
                        if (idleSince < 0) idleSince = System.currentTimeMillis();
                        if (System.currentTimeMillis() - idleSince > 3000) break;
                    } else {
                        idleSince = -1;
                    }
                }
            }
            acceptedCounts.put(g, accepted.size());
            deliveries.put(g, poisonSeen);
        }

        ObjectNode answer = M.createObjectNode();
        answer.set("did", did);
        ObjectNode described = answer.putObject("groups");
        Map<String, ShareGroupDescription> d = admin.describeShareGroups(List.of(groups)).all().get();
        for (String g : groups) {
            ShareGroupDescription sd = d.get(g);
            ObjectNode gn = described.putObject(g);
            gn.put("state", sd.groupState().toString());
            gn.put("group_epoch", sd.groupEpoch());
            gn.put("assignment_epoch", sd.targetAssignmentEpoch());
            ArrayNode members = gn.putArray("members");
            for (ShareMemberDescription m : sd.members()) {
                ObjectNode mn = members.addObject();
                mn.put("member_id", m.consumerId());
                mn.put("client_id", m.clientId());
                mn.put("member_epoch", m.memberEpoch());
                ArrayNode tps = mn.putArray("assignment");
                for (TopicPartition tp : m.assignment().topicPartitions()) tps.add(tp.topic() + ":" + tp.partition());
            }
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin.listShareGroupOffsets(
                Map.of(g, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(g).get();
            ObjectNode on = gn.putObject("start_offsets");
            ObjectNode lag = gn.putObject("lag");
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offsets.entrySet()) {
                String tp = e.getKey().topic() + ":" + e.getKey().partition();
                SharePartitionOffsetInfo v = e.getValue();
                on.put(tp, v == null ? -1 : v.startOffset());
                if (v != null) v.lag().ifPresent(l -> lag.put(tp, l));
            }
        }
        Map<TopicPartition, OffsetSpec> want = new HashMap<>();
        for (int p = 0; p < partitions; p++) want.put(new TopicPartition(topic, p), OffsetSpec.latest());
        ObjectNode ends = answer.putObject("log_end_offsets");
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : admin.listOffsets(want).all().get().entrySet())
            ends.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue().offset());
        ObjectNode ids = answer.putObject("topic_ids");
        for (TopicDescription td : admin.describeTopics(List.of(topic)).allTopicNames().get().values())
            ids.put(td.name(), td.topicId().toString());
        out.println(M.writeValueAsString(answer));
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        Runtime.getRuntime().halt(0);
    }
}
