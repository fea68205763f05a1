// A Streams-group scenario (KIP-1071, group.protocol=streams) on a real Kafka 4.2+ cluster, built
// with the release's kafka-streams and clients jars (testkit.cluster.share_streams compiles it).
//
// Usage: StreamsScenario <bootstrap> <application id> <input topic> <partitions> <records> <instances> <state dir>
//                        [<faulty application id>]
//        StreamsScenario instance <bootstrap> <application id> <input topic> <state dir> <client id>
//
// It creates <input topic>, produces <records> records over its partitions, and runs
// <instances> KafkaStreams instances of one application (a repartition by value, then a count
// into a state store: two subtopologies, a repartition topic and a changelog topic) until every
// instance is RUNNING and the group's committed offsets reach the input's log end.
//
// With a faulty application id it then runs a second application of the same topology whose
// instances are JVMs of their own (the "instance" mode): two of them until the group settles,
// then a third, and as soon as describeStreamsGroups shows an old member that must hand active
// tasks over to another member (its target assignment lacks an active task it holds), that
// member's JVM is killed (Process.destroyForcibly: SIGKILL, no leave). The second application
// reads <faulty application id>-input; after the kill 60 more records go to it over 15 s (the
// live members process and commit them, the dead member's tasks fall behind), then it takes the
// cluster's answers: well inside the 45 s session timeout, so the coordinator still counts the
// dead member.
//
// It prints one JSON line with the cluster's answers (describeStreamsGroups: epochs, the
// subtopologies, members with their process, epoch, current and target active/standby/warm-up
// tasks; listStreamsGroupOffsets; log end offsets), "faulty" likewise with what it did (the member
// killed, its tasks, when), waits for a line on stdin and halts without the members leaving.

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

    static Set<String> active(StreamsGroupMemberAssignment a) {
        Set<String> out = new TreeSet<>();
        for (StreamsGroupMemberAssignment.TaskIds t : a.activeTasks())
            for (Integer p : t.partitions()) out.add(t.subtopologyId() + "_" + p);
        return out;
    }

    // one instance of the application: repartition by value, count into a store
    static KafkaStreams instance(String bootstrap, String app, String input, String stateDir, String clientId) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, org.apache.kafka.streams.kstream.Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((k, v) -> v)
            .groupByKey(org.apache.kafka.streams.kstream.Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"));
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        sp.put("group.protocol", "streams");
        sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        if (clientId != null) sp.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        KafkaStreams ks = new KafkaStreams(b.build(), sp);
        ks.start();
        return ks;
    }

    static StreamsGroupDescription describe(Admin admin, String app) throws Exception {
        return admin.describeStreamsGroups(List.of(app)).all().get().get(app);
    }

    static Map<TopicPartition, OffsetAndMetadata> committed(Admin admin, String app) throws Exception {
        return admin.listStreamsGroupOffsets(Map.of(app, new ListStreamsGroupOffsetsSpec()))
            .partitionsToOffsetAndMetadata(app).get();
    }

    static boolean settled(StreamsGroupDescription d, int members) {
        return d.targetAssignmentEpoch() == d.groupEpoch()
            && d.members().stream().allMatch(m -> m.memberEpoch() == d.targetAssignmentEpoch()
                                                  && m.assignment().equals(m.targetAssignment()))
            && d.members().size() == members;
    }

    // waits until the group has <members> members at its assignment epoch and its committed
    // offsets reach <ends>; false after two minutes
    static boolean settle(Admin admin, String app, int members, Map<TopicPartition, Long> ends,
                          List<KafkaStreams> running) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            boolean allRunning = running.stream().allMatch(k -> k.state() == KafkaStreams.State.RUNNING);
            Map<TopicPartition, OffsetAndMetadata> c = committed(admin, app);
            boolean caughtUp = true;
            for (var e : ends.entrySet()) {
                OffsetAndMetadata o = c.get(e.getKey());
                if (o == null || o.offset() < e.getValue()) caughtUp = false;
            }
            if (allRunning && caughtUp && settled(describe(admin, app), members)) return true;
            Thread.sleep(500);
        }
        return false;
    }

    static ObjectNode group(Admin admin, String app) throws Exception {
        StreamsGroupDescription d = describe(admin, app);
        ObjectNode g = M.createObjectNode();
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
            ObjectNode target = mn.putObject("target");
            tasks(target, "active", m.targetAssignment().activeTasks());
            tasks(target, "standby", m.targetAssignment().standbyTasks());
            tasks(target, "warmup", m.targetAssignment().warmupTasks());
        }
        return g;
    }

    static ObjectNode offsets(Admin admin, String app) throws Exception {
        ObjectNode co = M.createObjectNode();
        for (var e : committed(admin, app).entrySet())
            if (e.getValue() != null) co.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue().offset());
        return co;
    }

    static Process child(String bootstrap, String app, String input, String stateDir, String clientId) throws Exception {
        String java = System.getProperty("java.home") + "/bin/java";
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
            "StreamsScenario", "instance", bootstrap, app, input, stateDir, clientId);
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        return pb.start();
    }

    // the faulty group: two instances settled, a third joins, an old member that has to hand
    // active tasks over is killed mid-rebalance
    static void produce(String bootstrap, String topic, int partitions, int records, long pauseMs) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "w" + (i % 7))).get();
                if (pauseMs > 0) Thread.sleep(pauseMs);
            }
        }
    }

    static Map<TopicPartition, Long> ends(Admin admin, String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> want = new HashMap<>();
        for (int p = 0; p < partitions; p++) want.put(new TopicPartition(topic, p), OffsetSpec.latest());
        Map<TopicPartition, Long> ends = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (var e : admin.listOffsets(want).all().get().entrySet()) ends.put(e.getKey(), e.getValue().offset());
        return ends;
    }

    static ObjectNode ends(Map<TopicPartition, Long> ends) {
        ObjectNode le = M.createObjectNode();
        for (var e : ends.entrySet()) le.put(e.getKey().topic() + ":" + e.getKey().partition(), e.getValue());
        return le;
    }

    static ObjectNode faulty(Admin admin, String bootstrap, String app, String input, int partitions, int records,
                             String stateDir) throws Exception {
        ObjectNode did = M.createObjectNode();
        did.put("input", input);
        admin.createTopics(List.of(new NewTopic(input, partitions, (short) 1))).all().get();
        produce(bootstrap, input, partitions, records, 0);
        Map<TopicPartition, Long> ends = ends(admin, input, partitions);
        Map<String, Process> kids = new LinkedHashMap<>();
        for (int n = 0; n < 2; n++)
            kids.put(app + "-" + n, child(bootstrap, app, input, stateDir + "/" + app + "-" + n, app + "-" + n));
        did.put("settled_before", settle(admin, app, 2, ends, List.of()));
        did.set("before", group(admin, app));
        kids.put(app + "-2", child(bootstrap, app, input, stateDir + "/" + app + "-2", app + "-2"));
        long deadline = System.currentTimeMillis() + 90_000;
        StreamsGroupMemberDescription victim = null;
        while (victim == null && System.currentTimeMillis() < deadline) {
            StreamsGroupDescription d = describe(admin, app);
            if (d.members().size() == 3)
                for (StreamsGroupMemberDescription m : d.members())
                    if (!m.clientId().startsWith(app + "-2")
                        && !active(m.targetAssignment()).containsAll(active(m.assignment()))) {
                        victim = m;
                        break;
                    }
            if (victim == null) Thread.sleep(20);
        }
        if (victim == null) throw new IllegalStateException("no member of " + app + " had to hand a task over");
        String name = victim.clientId().substring(0, victim.clientId().indexOf("-StreamThread"));
        Process p = kids.get(name);
        p.destroyForcibly();
        p.waitFor();
        did.put("killed_member_id", victim.memberId());
        did.put("killed_client_id", victim.clientId());
        did.put("killed_at_ms", System.currentTimeMillis());
        did.put("killed_exit", p.exitValue());
        ArrayNode held = did.putArray("killed_held_active");
        for (String t : active(victim.assignment())) held.add(t);
        ArrayNode kept = did.putArray("killed_target_active");
        for (String t : active(victim.targetAssignment())) kept.add(t);
        // the input goes on (the live members process and commit; the dead member's tasks fall behind)
        produce(bootstrap, input, partitions, 60, 250);
        did.put("answered_at_ms", System.currentTimeMillis());
        return did;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("instance")) {
            instance(args[1], args[2], args[3], args[4], args[5]);
            Thread.sleep(Long.MAX_VALUE);
            return;
        }
        String bootstrap = args[0], app = args[1], input = args[2];
        int partitions = Integer.parseInt(args[3]), records = Integer.parseInt(args[4]);
        int instances = Integer.parseInt(args[5]);
        String stateDir = args[6];
        String faultyApp = args.length > 7 ? args[7] : null;
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        Admin admin = Admin.create(ap);
        admin.createTopics(List.of(new NewTopic(input, partitions, (short) 1))).all().get();
        produce(bootstrap, input, partitions, records, 0);

        List<KafkaStreams> running = new ArrayList<>();
        for (int n = 0; n < instances; n++) running.add(instance(bootstrap, app, input, stateDir + "/" + n, null));
        Map<TopicPartition, Long> ends = ends(admin, input, partitions);
        settle(admin, app, instances, ends, running);
        ObjectNode answer = M.createObjectNode();
        if (faultyApp != null) {
            String faultyInput = faultyApp + "-input";
            ObjectNode did = faulty(admin, bootstrap, faultyApp, faultyInput, partitions, records, stateDir);
            ObjectNode f = answer.putObject("faulty");
            f.set("did", did);
            f.set("group", group(admin, faultyApp));
            f.set("committed", offsets(admin, faultyApp));
            f.set("log_end_offsets", ends(ends(admin, faultyInput, partitions)));
        }
        answer.set("group", group(admin, app));
        answer.set("committed", offsets(admin, app));
        answer.set("log_end_offsets", ends(ends));
        out.println(M.writeValueAsString(answer));
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        Runtime.getRuntime().halt(0);
    }
}
