// Raw records of MirrorMaker 2's internal topics, for the MM2 scenario (testkit.cluster.mm2),
// with the Java clients of the release under test and no MirrorMaker class:
//
//   Mm2Records BOOTSTRAP dump TOPIC          one JSON line per record of every partition, from the
//                                            start to the end offsets the broker lists:
//                                            {"partition", "offset", "key", "value"} (hex; null)
//   Mm2Records BOOTSTRAP put TOPIC PARTITION KEYHEX VALUEHEX
//                                            writes one record of the given bytes (acks=all) and
//                                            prints {"partition", "offset"}
//
// The bytes are the caller's: the test encodes and decodes them with kafka-python's protocol
// types, independently of kaudit's decoder.

import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Mm2Records {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], op = args[1], topic = args[2];
        if (op.equals("dump")) dump(bootstrap, topic);
        else if (op.equals("put")) put(bootstrap, topic, Integer.parseInt(args[3]), args[4], args[5]);
        else throw new IllegalArgumentException("unknown op " + op);
    }

    static String hex(byte[] b) {
        if (b == null) return "null";
        StringBuilder s = new StringBuilder("\"");
        for (byte x : b) s.append(String.format("%02x", x));
        return s.append('"').toString();
    }

    static byte[] bytes(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    static void dump(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30)))
                tps.add(new TopicPartition(topic, pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 60000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("dump " + topic + ": timed out");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200)))
                    System.out.println("{\"partition\": " + r.partition() + ", \"offset\": " + r.offset()
                            + ", \"key\": " + hex(r.key()) + ", \"value\": " + hex(r.value()) + "}");
            }
        }
    }

    static void put(String bootstrap, String topic, int partition, String key, String value) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(p)) {
            RecordMetadata m = prod.send(new ProducerRecord<>(topic, partition, bytes(key), bytes(value))).get();
            System.out.println("{\"partition\": " + m.partition() + ", \"offset\": " + m.offset() + "}");
        }
    }
}
