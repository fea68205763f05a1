// A tiered-storage scenario (KIP-405) on a real Kafka 4.x broker with remote storage on
// (testkit.cluster.tiered compiles it against the release's jars and starts the broker with
// Kafka's LocalTieredStorage test plugin and the topic-based remote log metadata manager).
//
// Usage: TieredScenario <bootstrap> <topic> <batches> <records per batch> <expired batches of partition 0>
//
// It creates <topic> with 2 partitions, remote.storage.enable=true, segment.ms=60000,
// local.retention.ms=300000 and retention.ms=3600000, then produces <batches> batches of
// <records per batch> records to each partition, one send+flush per batch, with record
// timestamps 61 s apart: the broker rolls a segment at every batch (the roll follows the
// records' timestamps), so batch i is segment i (offsets i*n .. i*n+n-1). On partition 0 the
// first <expired batches> batches are timestamped two days ago (past retention.ms: their remote
// segments are deleted), the others half an hour ago (past local retention), the last one now
// (the active segment, not past local retention for 5 minutes); partition 1 the same without
// the expired ones.
// The broker copies every rolled segment to remote storage, deletes the local copies (local
// retention) and expires the old remote ones. The program waits until listOffsets answers what
// it expects (earliest = expired*n on p0, 0 on p1; earliest-local = the active segment's base,
// (batches-1)*n; latest = batches*n), then commits, with the Admin API, for groups:
//   tiered-lost    p0: earliest - 3 (inside the deleted range: lost)
//   tiered-remote  p0, p1: earliest + 2 (only in remote storage: not lost)
//   tiered-local   p0, p1: earliest-local + 1 (local)
//   tiered-end     p0, p1: latest
// and prints one JSON line: what it did and the broker's listOffsets answers (earliest,
// earliest-local, latest) per partition, the topic id and the groups' committed offsets as
// listConsumerGroupOffsets reads them back. It then waits for a line on stdin and exits.

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class TieredScenario {
    static final ObjectMapper M = new ObjectMapper();

    static Map<TopicPartition, Long> offsets(Admin admin, String topic, int partitions, OffsetSpec spec) throws Exception {
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        for (int p = 0; p < partitions; p++) ask.put(new TopicPartition(topic, p), spec);
        Map<TopicPartition, Long> out = new HashMap<>();
        admin.listOffsets(ask).all().get().forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int batches = Integer.parseInt(args[2]), perBatch = Integer.parseInt(args[3]);
        int expired = Integer.parseInt(args[4]);
        int partitions = 2;
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(java.io.OutputStream.nullOutputStream()));
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ap.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        Admin admin = Admin.create(ap);
        Map<String, String> configs = Map.of(
            "remote.storage.enable", "true", "segment.ms", "60000", "local.retention.ms", "300000",
            "retention.ms", "3600000", "file.delete.delay.ms", "1000");
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all().get();

        long now = System.currentTimeMillis();
        long old = now - 2L * 24 * 3600 * 1000, recent = now - 1800L * 1000;
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int p = 0; p < partitions; p++) {
                for (int b = 0; b < batches; b++) {
                    long ts = b == batches - 1 ? now : (p == 0 && b < expired ? old : recent) + b * 61_000L;
                    List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
                    for (int i = 0; i < perBatch; i++) {
                        sent.add(producer.send(new ProducerRecord<>(topic, p, ts, "k" + i, "v-" + p + "-" + b + "-" + i)));
                    }
                    producer.flush();
                    for (var f : sent) f.get();
                }
            }
        }

        long activeBase = (long) (batches - 1) * perBatch, end = (long) batches * perBatch;
        long[] wantEarliest = {(long) expired * perBatch, 0L};
        Map<TopicPartition, Long> earliest = null, local = null, latest = null;
        long deadline = System.currentTimeMillis() + 180_000;
        boolean settled = false;
        while (System.currentTimeMillis() < deadline) {
            earliest = offsets(admin, topic, partitions, OffsetSpec.earliest());
            local = offsets(admin, topic, partitions, OffsetSpec.earliestLocal());
            latest = offsets(admin, topic, partitions, OffsetSpec.latest());
            settled = true;
            for (int p = 0; p < partitions; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                settled &= earliest.get(tp) == wantEarliest[p] && local.get(tp) == activeBase && latest.get(tp) == end;
            }
            if (settled) break;
            Thread.sleep(500);
        }

        ObjectNode did = M.createObjectNode();
        did.put("batches", batches).put("records_per_batch", perBatch).put("expired_batches_p0", expired);
        did.put("settled", settled).put("produced_at", now).put("retention_ms", 3600000L)
            .put("recent_offset_ms", 1800000L).put("batch_spacing_ms", 61000L);
        Map<String, Map<TopicPartition, OffsetAndMetadata>> commits = new LinkedHashMap<>();
        TopicPartition p0 = new TopicPartition(topic, 0);
        commits.put("tiered-lost", Map.of(p0, new OffsetAndMetadata(earliest.get(p0) - 3)));
        for (String g : List.of("tiered-remote", "tiered-local", "tiered-end")) {
            Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                long o = g.equals("tiered-remote") ? earliest.get(tp) + 2
                    : g.equals("tiered-local") ? local.get(tp) + 1 : latest.get(tp);
                m.put(tp, new OffsetAndMetadata(o));
            }
            commits.put(g, m);
        }
        for (var e : commits.entrySet()) admin.alterConsumerGroupOffsets(e.getKey(), e.getValue()).all().get();

        ObjectNode answer = M.createObjectNode();
        answer.set("did", did);
        answer.put("topic", topic);
        answer.put("topic_id", admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId().toString());
        ObjectNode parts = answer.putObject("partitions");
        for (int p = 0; p < partitions; p++) {
            TopicPartition tp = new TopicPartition(topic, p);
            parts.putObject(topic + "/" + p).put("earliest", earliest.get(tp)).put("earliest_local", local.get(tp))
                .put("latest", latest.get(tp));
        }
        ObjectNode groups = answer.putObject("committed");
        for (String g : commits.keySet()) {
            ObjectNode gn = groups.putObject(g);
            admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get()
                .forEach((tp, om) -> gn.put(tp.topic() + "/" + tp.partition(), om.offset()));
        }
        out.println(M.writeValueAsString(answer));
        admin.close();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    }
}
