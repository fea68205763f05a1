"""Expected owners of ZooKeeper-era groups: range (remainders, 11 streams, more threads than
partitions, 0.7 layout) and round-robin (hash order, mixed subscriptions). Hand-computed."""

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.spark.assignment_zk import expected_assignment
from pipelines.spark.javahash import topic_partition_hash
from testkit.javahash import java_string_hash

REG = "group_id string, consumer_id string, topic string, streams int"
TP = "topic string, partition int, broker_id int"


def _expected(spark, regs, parts, assignors=None):
    out = expected_assignment(spark.createDataFrame(regs, REG), spark.createDataFrame(parts, TP), assignors or {})
    return out.select("group_id", "topic", "partition", "broker_id", "expected_owner", "assignor")


def test_range_cases(spark):
    regs = [
        # 5 partitions over 2 consumers x 1 stream: remainder to the first thread
        ("rem", "a", "five", 1),
        ("rem", "b", "five", 1),
        # 11 streams of one consumer over 11 partitions: threads sort as strings (x-10 < x-2)
        ("eleven", "x", "elevenp", 11),
        # 3 threads, 2 partitions: the last thread gets nothing
        ("many", "m", "two", 3),
    ]
    parts = [("five", p, None) for p in range(5)] + [("elevenp", p, None) for p in range(11)]
    parts += [("two", p, None) for p in range(2)]
    got = _expected(spark, regs, parts)
    order = sorted(f"x-{i}" for i in range(11))  # x-0, x-1, x-10, x-2, ...
    want = [
        ("rem", "five", 0, None, "a-0", "range"),
        ("rem", "five", 1, None, "a-0", "range"),
        ("rem", "five", 2, None, "a-0", "range"),
        ("rem", "five", 3, None, "b-0", "range"),
        ("rem", "five", 4, None, "b-0", "range"),
        ("many", "two", 0, None, "m-0", "range"),
        ("many", "two", 1, None, "m-1", "range"),
    ] + [("eleven", "elevenp", p, None, order[p], "range") for p in range(11)]
    assert order[2] == "x-10"
    assertDataFrameEqual(got, want)


def test_range_07_layout_sorts_broker_partition_names_as_strings(spark):
    # brokers 1 (3 partitions) and 10 (1) and 2 (2): order "1-0","1-1","1-2","10-0","2-0","2-1"
    parts = [("old", p, 1) for p in range(3)] + [("old", 0, 10)] + [("old", p, 2) for p in range(2)]
    regs = [("g7", "c1", "old", 1), ("g7", "c2", "old", 2)]  # threads c1-0, c2-0, c2-1 -> 2, 2, 2
    got = _expected(spark, regs, parts)
    want = [
        ("g7", "old", 0, 1, "c1-0", "range"),
        ("g7", "old", 1, 1, "c1-0", "range"),
        ("g7", "old", 2, 1, "c2-0", "range"),
        ("g7", "old", 0, 10, "c2-0", "range"),
        ("g7", "old", 0, 2, "c2-1", "range"),
        ("g7", "old", 1, 2, "c2-1", "range"),
    ]
    assertDataFrameEqual(got, want)


def _deal(threads_by_topic: dict[str, list[str]], parts: list[tuple[str, int]]) -> dict:
    """The 0.9+ ZooKeeper round-robin, written out plainly for the test."""
    circle = sorted({t for ts in threads_by_topic.values() for t in ts})
    order = sorted(parts, key=lambda tp: (java_string_hash(f"[{tp[0]},{tp[1]}]"), tp))
    out, pos = {}, 0
    for topic, p in order:
        while circle[pos % len(circle)] not in threads_by_topic[topic]:
            pos += 1
        out[(topic, p)] = circle[pos % len(circle)]
        pos += 1
    return out


def test_roundrobin_uniform_and_mixed_subscriptions(spark):
    regs = [
        ("rr", "a", "orders", 2),
        ("rr", "a", "clicks", 2),
        ("rr", "b", "orders", 2),
        ("rr", "b", "clicks", 2),
        ("mix", "a", "orders", 1),
        ("mix", "b", "orders", 1),
        ("mix", "b", "clicks", 2),
    ]
    parts = [("orders", p, None) for p in range(12)] + [("clicks", p, None) for p in range(4)]
    got = _expected(spark, regs, parts, {"rr": "roundrobin", "mix": "roundrobin"})
    every = ["a-0", "a-1", "b-0", "b-1"]
    uniform = _deal({"orders": every, "clicks": every}, [(t, p) for t, p, _ in parts])
    mixed = _deal({"orders": ["a-0", "b-0"], "clicks": ["b-0", "b-1"]}, [(t, p) for t, p, _ in parts])
    want = [("rr", t, p, None, o, "roundrobin") for (t, p), o in uniform.items()]
    want += [("mix", t, p, None, o, "roundrobin") for (t, p), o in mixed.items()]
    assertDataFrameEqual(got, want)
    # the hash order really is not the numeric order here (the test would be weak otherwise)
    order = spark.createDataFrame(parts, TP).select(
        "topic", "partition", topic_partition_hash(F.col("topic"), F.col("partition")).alias("h")
    )
    assert [(r.topic, r.partition) for r in order.orderBy("h").collect()] != sorted((t, p) for t, p, _ in parts)
