// A scenario driver for real Kafka clusters, built with the Java clients of the release under test
// (testkit.cluster.driver compiles it once per release against that release's jars).
//
// It reads one JSON request a line on stdin and answers one JSON line on stdout:
// {"ok": true, "result": ...} or {"ok": false, "error": "..."}. The Python test decides the
// scenario; this program only does what it is told, with the real clients and the Admin API:
// topics, producers (transactions committed and aborted), consumer groups of classic members
// (range, roundrobin, sticky, cooperative-sticky, static members) and KIP-848 members
// (group.protocol=consumer, server assignors, regex subscriptions), commits, and the cluster's
// own answers ("describe": groups, members, assignments, committed offsets, log offsets, topics).
// APIs that differ between releases (3.9 and 4.x) are reached by reflection, so one source builds
// against every release.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Driver {
    static final ObjectMapper M = new ObjectMapper();
    static String bootstrap;
    static Admin admin;
    // group -> member name -> member
    static final Map<String, Map<String, Member>> groups = new TreeMap<>();

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        admin = Admin.create(p);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode reply = M.createObjectNode();
            JsonNode req = M.readTree(line);
            String op = req.path("op").asText();
            if (op.equals("exit")) {
                reply.put("ok", true);
                out.println(reply);
                break;
            }
            try {
                reply.set("result", run(op, req));
                reply.put("ok", true);
            } catch (Throwable t) {
                Throwable c = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
                reply.put("ok", false);
                reply.put("error", c.getClass().getName() + ": " + c.getMessage());
            }
            out.println(reply);
        }
        // members are not closed: the brokers may be gone already (the test stops them first)
        out.flush();
        Runtime.getRuntime().halt(0);
    }

    static JsonNode run(String op, JsonNode r) throws Exception {
        switch (op) {
            case "create": return create(r);
            case "delete": admin.deleteTopics(List.of(r.get("topic").asText())).all().get(); return null;
            case "produce": return produce(r);
            case "join": return join(r);
            case "wait_stable": return waitStable(r);
            case "wait_empty": return waitEmpty(r);
            case "commit": return commit(r);
            case "close": return close(r);
            case "alter_offsets": return alterOffsets(r);
            case "delete_records": return deleteRecords(r);
            case "reassign": return reassign(r);
            case "describe": return describe(r);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // --- topics and records -----------------------------------------------------------------
    static JsonNode create(JsonNode r) throws Exception {
        NewTopic t = new NewTopic(r.get("topic").asText(), r.path("partitions").asInt(1),
                (short) r.path("replication").asInt(1));
        Map<String, String> cfg = new HashMap<>();
        r.path("configs").fields().forEachRemaining(e -> cfg.put(e.getKey(), e.getValue().asText()));
        t.configs(cfg);
        admin.createTopics(List.of(t)).all().get();
        // metadata reaches every broker shortly after; wait until the leaders are known
        for (int i = 0; i < 100; i++) {
            try {
                TopicDescription d = admin.describeTopics(List.of(t.name())).allTopicNames().get().get(t.name());
                if (d.partitions().stream().allMatch(x -> x.leader() != null && !x.leader().isEmpty())) break;
            } catch (ExecutionException e) { /* not known yet */ }
            Thread.sleep(100);
        }
        return null;
    }

    // "per_partition" records to each partition of "topic" (keys k-<partition>-<i>, value "v"),
    // optionally inside one transaction ("transactional_id"), committed or aborted ("abort"),
    // with the offsets of "txn_offsets" {group, offsets} sent to the transaction.
    static JsonNode produce(JsonNode r) throws Exception {
        String topic = r.get("topic").asText();
        int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        String txn = r.path("transactional_id").asText(null);
        if (txn != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txn);
        ObjectNode res = M.createObjectNode();
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            if (txn != null) { prod.initTransactions(); prod.beginTransaction(); }
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            int n = r.path("per_partition").asInt(0);
            Long ts = r.has("timestamp") ? r.get("timestamp").asLong() : null;
            for (int part = 0; part < partitions; part++)
                for (int i = 0; i < n; i++)
                    sent.add(prod.send(new ProducerRecord<>(topic, part, ts, "k-" + part + "-" + i, "v")));
            if (r.has("txn_offsets")) {
                JsonNode o = r.get("txn_offsets");
                prod.sendOffsetsToTransaction(offsets(o.get("offsets")), new ConsumerGroupMetadata(o.get("group").asText()));
            }
            if (txn != null) {
                if (r.path("abort").asBoolean(false)) { prod.flush(); prod.abortTransaction(); }
                else prod.commitTransaction();
            }
            prod.flush();
            ArrayNode last = res.putArray("offsets");
            for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                last.add(m.partition() + ":" + m.offset());
            }
        }
        return res;
    }

    static Map<TopicPartition, OffsetAndMetadata> offsets(JsonNode o) {
        Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
        o.fields().forEachRemaining(e -> {
            String k = e.getKey();
            int i = k.lastIndexOf(':');
            m.put(new TopicPartition(k.substring(0, i), Integer.parseInt(k.substring(i + 1))),
                    new OffsetAndMetadata(e.getValue().asLong()));
        });
        return m;
    }

    // --- consumer group members ---------------------------------------------------------------
    // One thread per member owns its KafkaConsumer (not thread-safe) and polls all the time, so it
    // heartbeats and takes part in rebalances; other requests reach it through its queue.
    static final class Member implements Runnable {
        final String group, name;
        final KafkaConsumer<String, String> consumer;
        final BlockingQueue<Callable<Object>> tasks = new LinkedBlockingQueue<>();
        final Thread thread;
        volatile boolean running = true;
        volatile Set<TopicPartition> assigned = Set.of();
        volatile String memberId = null;
        long consumed = 0;

        Member(String group, String name, Properties p) {
            this.group = group;
            this.name = name;
            this.consumer = new KafkaConsumer<>(p);
            this.thread = new Thread(this, "member-" + group + "-" + name);
            this.thread.setDaemon(true);
        }

        public void run() {
            while (running) {
                try {
                    consumed += consumer.poll(Duration.ofMillis(100)).count();
                    assigned = new HashSet<>(consumer.assignment());
                    memberId = consumer.groupMetadata().memberId();
                    Callable<Object> t;
                    while ((t = tasks.poll()) != null) t.call();
                } catch (org.apache.kafka.common.errors.WakeupException e) {
                    // a task woke the poll
                } catch (Throwable e) {
                    if (!running) return;
                    System.err.println("member " + name + ": " + e);
                    try { Thread.sleep(100); } catch (InterruptedException ie) { return; }
                }
            }
        }

        Object call(Callable<Object> c) throws Exception {
            CompletableFuture<Object> f = new CompletableFuture<>();
            tasks.add(() -> {
                try { f.complete(c.call()); } catch (Throwable e) { f.completeExceptionally(e); }
                return null;
            });
            return f.get(60, TimeUnit.SECONDS);
        }
    }

    static JsonNode join(JsonNode r) throws Exception {
        String group = r.get("group").asText();
        String name = r.get("member").asText();
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + name);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
        String protocol = r.path("protocol").asText("classic");
        if (!protocol.equals("classic") || r.has("force_protocol")) p.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, r.path("session_timeout_ms").asText("10000"));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            String a = r.path("assignor").asText("range");
            String cls = switch (a) {
                case "range" -> RangeAssignor.class.getName();
                case "roundrobin" -> RoundRobinAssignor.class.getName();
                case "sticky" -> StickyAssignor.class.getName();
                case "cooperative-sticky" -> CooperativeStickyAssignor.class.getName();
                default -> throw new IllegalArgumentException("assignor " + a);
            };
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, cls);
        } else if (r.has("assignor")) {
            p.put("group.remote.assignor", r.get("assignor").asText());
        }
        if (r.hasNonNull("instance")) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, r.get("instance").asText());
        Member m = new Member(group, name, p);
        if (r.has("pattern")) {
            String pattern = r.get("pattern").asText();
            if (protocol.equals("consumer")) {
                // the broker-side regex of KIP-848 (SubscriptionPattern, 4.x clients)
                Class<?> sp = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
                Object pat = sp.getConstructor(String.class).newInstance(pattern);
                KafkaConsumer.class.getMethod("subscribe", sp).invoke(m.consumer, pat);
            } else {
                m.consumer.subscribe(Pattern.compile(pattern));
            }
        } else {
            List<String> topics = new ArrayList<>();
            r.get("topics").forEach(t -> topics.add(t.asText()));
            m.consumer.subscribe(topics);
        }
        groups.computeIfAbsent(group, g -> new TreeMap<>()).put(name, m);
        m.thread.start();
        return null;
    }

    static Member member(JsonNode r) {
        Map<String, Member> g = groups.get(r.get("group").asText());
        Member m = g == null ? null : g.get(r.get("member").asText());
        if (m == null) throw new IllegalArgumentException("no member " + r);
        return m;
    }

    // Until the group is Stable with "members" members, every member's assignment known to its
    // client, and (KIP-848) each member at the target assignment with the group's epoch.
    static JsonNode waitStable(JsonNode r) throws Exception {
        String group = r.get("group").asText();
        int want = r.get("members").asInt();
        long deadline = System.currentTimeMillis() + r.path("timeout_ms").asLong(60000);
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            ConsumerGroupDescription d;
            try {
                d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            } catch (ExecutionException e) {  // GroupIdNotFound: no member has joined yet
                last = e.getCause().toString();
                Thread.sleep(200);
                continue;
            }
            String state = String.valueOf(call(d, "groupState", "state"));
            Set<TopicPartition> held = new HashSet<>();
            int parts = 0;
            boolean atTarget = true;
            for (MemberDescription md : d.members()) {
                held.addAll(md.assignment().topicPartitions());
                parts += md.assignment().topicPartitions().size();
                Object target = call(md, "targetAssignment");
                if (target instanceof Optional<?> o && o.isPresent()) {
                    Set<TopicPartition> tp = ((MemberAssignment) o.get()).topicPartitions();
                    if (!tp.equals(md.assignment().topicPartitions())) atTarget = false;
                }
            }
            Map<String, Member> local = groups.getOrDefault(group, Map.of());
            Set<TopicPartition> clients = new HashSet<>();
            int clientParts = 0;
            for (Member m : local.values()) if (m.running) { clients.addAll(m.assigned); clientParts += m.assigned.size(); }
            last = state + " members=" + d.members().size() + " held=" + held + " clients=" + clients + " atTarget=" + atTarget;
            if (state.equalsIgnoreCase("stable") && d.members().size() == want && atTarget
                    && parts == held.size() && held.equals(clients) && clientParts == clients.size()) {
                Thread.sleep(r.path("settle_ms").asLong(300));
                return M.valueToTree(last);
            }
            Thread.sleep(200);
        }
        throw new TimeoutException("group " + group + " not stable: " + last);
    }

    // Until the group is Empty (its last member's LeaveGroup done): tools that reset offsets need it.
    static JsonNode waitEmpty(JsonNode r) throws Exception {
        String group = r.get("group").asText();
        String state = "";
        for (int i = 0; i < 300; i++) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            state = String.valueOf(call(d, "groupState", "state"));
            if (state.equalsIgnoreCase("empty")) return null;
            Thread.sleep(200);
        }
        throw new TimeoutException("group " + group + " not empty: " + state);
    }

    // commitSync by one member: its position on every partition it holds, after it has read up
    // to "upto" (the log end by default, within a few seconds), or the explicit "offsets".
    static JsonNode commit(JsonNode r) throws Exception {
        Member m = member(r);
        Object res = m.call(() -> {
            Map<TopicPartition, OffsetAndMetadata> o;
            if (r.has("offsets")) {
                o = offsets(r.get("offsets"));
            } else {
                Set<TopicPartition> a = m.consumer.assignment();
                Map<TopicPartition, Long> end = m.consumer.endOffsets(a);
                long deadline = System.currentTimeMillis() + 8000;
                while (System.currentTimeMillis() < deadline
                        && a.stream().anyMatch(tp -> m.consumer.position(tp) < end.get(tp)))
                    m.consumed += m.consumer.poll(Duration.ofMillis(100)).count();
                o = new HashMap<>();
                for (TopicPartition tp : a) o.put(tp, new OffsetAndMetadata(m.consumer.position(tp)));
            }
            m.consumer.commitSync(o);
            ObjectNode done = M.createObjectNode();
            o.forEach((tp, om) -> done.put(tp.topic() + ":" + tp.partition(), om.offset()));
            return done;
        });
        return (JsonNode) res;
    }

    static JsonNode close(JsonNode r) throws Exception {
        Member m = member(r);
        m.call(() -> { m.running = false; m.consumer.close(Duration.ofSeconds(10)); return null; });
        m.thread.join(15000);
        groups.get(m.group).remove(m.name);
        return null;
    }

    static JsonNode alterOffsets(JsonNode r) throws Exception {
        admin.alterConsumerGroupOffsets(r.get("group").asText(), offsets(r.get("offsets"))).all().get();
        return null;
    }

    static JsonNode deleteRecords(JsonNode r) throws Exception {
        Map<TopicPartition, RecordsToDelete> m = new HashMap<>();
        offsets(r.get("offsets")).forEach((tp, om) -> m.put(tp, RecordsToDelete.beforeOffset(om.offset())));
        admin.deleteRecords(m).all().get();
        return null;
    }

    static JsonNode reassign(JsonNode r) throws Exception {
        Map<TopicPartition, Optional<NewPartitionReassignment>> m = new HashMap<>();
        r.get("replicas").fields().forEachRemaining(e -> {
            String k = e.getKey();
            int i = k.lastIndexOf(':');
            List<Integer> reps = new ArrayList<>();
            e.getValue().forEach(x -> reps.add(x.asInt()));
            m.put(new TopicPartition(k.substring(0, i), Integer.parseInt(k.substring(i + 1))),
                    Optional.of(new NewPartitionReassignment(reps)));
        });
        admin.alterPartitionReassignments(m).all().get();
        for (int i = 0; i < 300; i++) {
            if (admin.listPartitionReassignments(m.keySet()).reassignments().get().isEmpty()) return null;
            Thread.sleep(200);
        }
        throw new TimeoutException("reassignment not done");
    }

    // --- the cluster's own answers ----------------------------------------------------------
    static JsonNode describe(JsonNode r) throws Exception {
        ObjectNode res = M.createObjectNode();
        DescribeClusterResult c = admin.describeCluster();
        ObjectNode cl = res.putObject("cluster");
        cl.put("cluster_id", c.clusterId().get());
        cl.put("controller", c.controller().get() == null ? -1 : c.controller().get().id());
        ArrayNode nodes = cl.putArray("brokers");
        for (Node n : c.nodes().get()) nodes.addObject().put("id", n.id()).put("host", n.host()).put("port", n.port());

        Set<String> names = admin.listTopics(new ListTopicsOptions().listInternal(false)).names().get();
        ObjectNode topics = res.putObject("topics");
        Map<TopicPartition, OffsetSpec> early = new HashMap<>(), late = new HashMap<>(), maxTs = new HashMap<>();
        for (TopicDescription d : admin.describeTopics(names).allTopicNames().get().values()) {
            ObjectNode t = topics.putObject(d.name());
            t.put("topic_id", d.topicId().toString());
            ArrayNode ps = t.putArray("partitions");
            for (TopicPartitionInfo pi : d.partitions()) {
                ObjectNode p = ps.addObject();
                p.put("partition", pi.partition());
                p.put("leader", pi.leader() == null || pi.leader().isEmpty() ? -1 : pi.leader().id());
                ArrayNode reps = p.putArray("replicas");
                pi.replicas().forEach(n -> reps.add(n.id()));
                ArrayNode isr = p.putArray("isr");
                pi.isr().forEach(n -> isr.add(n.id()));
                TopicPartition tp = new TopicPartition(d.name(), pi.partition());
                early.put(tp, OffsetSpec.earliest());
                late.put(tp, OffsetSpec.latest());
                maxTs.put(tp, OffsetSpec.maxTimestamp());
            }
        }
        ObjectNode offs = res.putObject("log_offsets");
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e = admin.listOffsets(early).all().get();
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> l = admin.listOffsets(late).all().get();
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> mt = admin.listOffsets(maxTs).all().get();
        for (TopicPartition tp : new TreeSet<>(Comparator.comparing(TopicPartition::toString)) {{ addAll(early.keySet()); }}) {
            ObjectNode o = offs.putObject(tp.topic() + ":" + tp.partition());
            o.put("earliest", e.get(tp).offset());
            o.put("latest", l.get(tp).offset());
            ListOffsetsResult.ListOffsetsResultInfo m = mt.get(tp);
            o.put("max_timestamp_offset", m.offset());
            o.put("max_timestamp", m.timestamp());
        }

        List<String> gids = new ArrayList<>();
        r.path("groups").forEach(g -> gids.add(g.asText()));
        ObjectNode gs = res.putObject("groups");
        if (!gids.isEmpty()) {
            for (ConsumerGroupDescription d : admin.describeConsumerGroups(gids).all().get().values()) {
                ObjectNode g = gs.putObject(d.groupId());
                g.put("state", String.valueOf(call(d, "groupState", "state")).toUpperCase(Locale.ROOT));
                putIf(g, "type", call(d, "type"));
                g.put("assignor", d.partitionAssignor());
                g.put("coordinator", d.coordinator() == null ? -1 : d.coordinator().id());
                putIf(g, "group_epoch", call(d, "groupEpoch"));
                putIf(g, "target_assignment_epoch", call(d, "targetAssignmentEpoch"));
                ArrayNode ms = g.putArray("members");
                for (MemberDescription md : d.members()) {
                    ObjectNode mo = ms.addObject();
                    mo.put("member_id", md.consumerId());
                    mo.put("instance_id", md.groupInstanceId().orElse(null));
                    mo.put("client_id", md.clientId());
                    mo.put("host", md.host());
                    mo.set("assignment", tps(md.assignment().topicPartitions()));
                    Object target = call(md, "targetAssignment");
                    if (target instanceof Optional<?> o && o.isPresent())
                        mo.set("target_assignment", tps(((MemberAssignment) o.get()).topicPartitions()));
                    putIf(mo, "member_epoch", call(md, "memberEpoch"));
                    putIf(mo, "upgraded", call(md, "upgraded"));
                }
                ObjectNode co = g.putObject("offsets");
                Map<TopicPartition, OffsetAndMetadata> committed =
                        admin.listConsumerGroupOffsets(d.groupId()).partitionsToOffsetAndMetadata().get();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> en : committed.entrySet())
                    if (en.getValue() != null)
                        co.put(en.getKey().topic() + ":" + en.getKey().partition(), en.getValue().offset());
            }
        }
        return res;
    }

    static ArrayNode tps(Collection<TopicPartition> c) {
        ArrayNode a = M.createArrayNode();
        c.stream().map(tp -> tp.topic() + ":" + tp.partition()).sorted().forEach(a::add);
        return a;
    }

    static void putIf(ObjectNode o, String k, Object v) {
        if (v instanceof Optional<?> opt) v = opt.orElse(null);
        if (v == null) return;
        if (v instanceof Number n) o.put(k, n.longValue());
        else if (v instanceof Boolean b) o.put(k, b);
        else o.put(k, v.toString());
    }

    // the first of the named no-argument methods the object has (null when it has none)
    static Object call(Object o, String... names) {
        for (String n : names) {
            try {
                Method m = o.getClass().getMethod(n);
                return m.invoke(o);
            } catch (NoSuchMethodException e) {
                // an older or newer release
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }
        return null;
    }
}
