// A Streams-group scenario (KIP-1071, group.protocol=streams) on a real Kafka 4.2+ cluster, built
// with the release's kafka-streams and clients jars (testkit.cluster.share_streams compiles it).
//
// Usage: StreamsScenario <bootstrap> <application id> <input topic> <partitions> <records> <instances> <state dir>
//
// It creates <input topic>, produces <records> records over its partitions, and runs
// <instances> KafkaStreams instances of one application (a repartition by value, then a count
// into a state store: two subtopologies, a repartition topic and a changelog topic) until every
// instance is RUNNING and the group's committed offsets reach the input's log end. It then
// prints one JSON line with the cluster's answers (describeStreamsGroups: epochs, members with
// their process, epoch, active/standby/warm-up tasks; listStreamsGroupOffsets; log end
// offsets), waits for a line on stdin and halts without the members leaving.

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;

public class StreamsScenario {
    static final ObjectMapper M = new ObjectMapper();

    static void tasks(ObjectNode into, String name, List<StreamsGroupMemberAssignment.TaskIds> tasks) {
        ArrayNode out = into.putArray(name);
        for (StreamsGroupMemberAssignment.TaskIds t : tasks)
            for (Integer p : t.partitions()) out.add(t.subtopologyId() + "_" + p);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], app = args[1], input = args[2];
        int partitions = Integer.parseInt(args[3]), records = Integer.parseInt(args[4]);
        int instances = Integer.parseInt(args[5]);
        String stateDir = args[6];
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Admin admin = Admin.create(ap);
        admin.createTopics(List.of(new NewTopic(input, partitions, (short) 1))).all().get();
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++)
                producer.send(new ProducerRecord<>(input, i % partitions, "k" + i, "w" + (i % 7))).get();
        }

        List<KafkaStreams> running = new ArrayList<>();
        for (int n = 0; n < instances; n++) {
            StreamsBuilder b = new StreamsBuilder();
            b.stream(input, org.apache.kafka.streams.kstream.Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .groupByKey(org.apache.kafka.streams.kstream.Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"));
            Properties sp = new Properties();
            sp.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
            sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir + "/" + n);
            sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
            sp.put("group.protocol", "streams");
            sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
            KafkaStreams ks = new KafkaStreams(b.build(), sp);
            ks.start();
            running.add(ks);
        }
        Map<TopicPartition, OffsetSpec> want = new HashMap<>();
        for (int p = 0; p < partitions; p++) want.put(new TopicPartition(input, p), OffsetSpec.latest());
        Map<TopicPartition, Long> ends = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (var e : admin.listOffsets(want).all().get().entrySet()) ends.put(e.getKey(), e.getValue().offset());
        long deadline = System.currentTimeMillis() + 120_000;
        Map<TopicPartition, OffsetAndMetadata> committed = Map.of();
        while (System.currentTimeMillis() < deadline) {
            boolean allRunning = running.stream().allMatch(k -> k.state() == KafkaStreams.State.RUNNING);
            committed = admin.listStreamsGroupOffsets(Map.of(app, new ListStreamsGroupOffsetsSpec()))
                .partitionsToOffsetAndMetadata(app).get();
            boolean caughtUp = true;
            for (var e : ends.entrySet()) {
                OffsetAndMetadata c = committed.get(e.getKey());
                if (c == null || c.offset() < e.getValue()) caughtUp = false;
            }
            StreamsGroupDescription d = admin.describeStreamsGroups(List.of(app)).all().get().get(app);
            boolean settled = d.targetAssignmentEpoch() == d.groupEpoch()
                && d.members().stream().allMatch(m -> m.memberEpoch() == d.targetAssignmentEpoch())
                && d.members().size() == instances;
            if (allRunning && caughtUp && settled) break;
            Thread.sleep(500);
        }
        ObjectNode answer = M.createObjectNode();
        StreamsGroupDescription d = admin.describeStreamsGroups(List.of(app)).all().get().get(app);
        ObjectNode g = answer.putObject("group");
        g.put("group_id", app);
        g.put("state", d.groupState().toString());
        g.put("group_epoch", d.groupEpoch());
        g.put("assignment_epoch", d.targetAssignmentEpoch());
        g.put("topology_epoch", d.topologyEpoch());
        ObjectNode subs = g.putObject("subtopologies");
        for (StreamsGroupSubtopologyDescription s : d.subtopologies()) {
            ObjectNode sn = subs.putObject(s.subtopologyId());
            sn.set("source_topics", M.valueToTree(s.sourceTopics()));
            sn.set("repartition_sink_topics", M.valueToTree(s.repartitionSinkTopics()));
            sn.set("state_changelog_topics", M.valueToTree(s.stateChangelogTopics().keySet()));
            sn.set("repartition_source_topics", M.valueToTree(s.repartitionSourceTopics().keySet()));
        }
        ArrayNode members = g.putArray("members");
        for (StreamsGroupMemberDescription m : d.members()) {
            ObjectNode mn = members.addObject();
            mn.put("member_id", m.memberId());
            mn.put("member_epoch", m.memberEpoch());
            mn.put("process_id", m.processId());
            mn.put("client_id", m.clientId());
            tasks(mn, "active", m.assignment().activeTasks());
            tasks(mn, "standby", m.assignment().standbyTasks());
            tasks(mn, "warmup", m.assignment().warmupTasks());
        }
        committed = admin.listStreamsGroupOffsets(Map.of(app, new ListStreamsGroupOffsetsSpec()))
            .partitionsToOffsetAndMetadata(app).get();
        ObjectNode co = answer.putObject("committed");
        for (var e : committed.entrySet())
            if (e.getValue() != null) co.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue().offset());
        ObjectNode le = answer.putObject("log_end_offsets");
        for (var e : ends.entrySet()) le.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue());
        out.println(M.writeValueAsString(answer));
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        Runtime.getRuntime().halt(0);
    }
}
