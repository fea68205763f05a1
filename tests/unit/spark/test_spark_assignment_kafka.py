"""Kafka groups: latest GroupMetadata record, static members first, range / roundrobin /
not-recomputed protocols, partition counts from ZooKeeper or log ends."""

from datetime import UTC, datetime

from pyspark.testing import assertDataFrameEqual

from pipelines.spark import assignment_kafka as ak
from pipelines.spark.schemas import table_schema

TS = datetime(2024, 1, 1, tzinfo=UTC)


def _meta(group, log_offset, protocol="range", tombstone=False, ptype="consumer"):
    return (group, 1, ptype, protocol, None, TS, tombstone, 3, 7, log_offset, "f.log", "r1")


def _member(group, log_offset, member, instance, topics):
    return (group, 1, 7, log_offset, member, instance, "cli", "/h", 10000, 30000, topics, "r1")


def test_latest_record_static_members_and_protocols(spark):
    meta = [
        _meta("st", 10, "range"),
        _meta("st", 5, "roundrobin"),  # older record: ignored
        _meta("rr", 11, "roundrobin"),
        _meta("sticky", 12, "cooperative-sticky"),
        _meta("dead", 13, "range"),
        _meta("dead", 14, None, tombstone=True),  # tombstone is the latest: no rows
        _meta("empty", 15, None),  # Empty group: no members
        _meta("conn", 16, "sessioned", ptype="connect"),
    ]
    members = [
        # static members first by instance id, then dynamic by member id
        _member("st", 10, "m-z", "inst-b", ["a"]),
        _member("st", 10, "m-a", None, ["a"]),
        _member("st", 10, "m-y", "inst-a", ["a"]),
        _member("st", 5, "old", None, ["a"]),
        _member("rr", 11, "r1", None, ["a", "b"]),
        _member("rr", 11, "r2", None, ["b"]),
        _member("sticky", 12, "s1", None, ["b"]),
        _member("dead", 13, "d1", None, ["a"]),
        _member("conn", 16, "w1", None, ["a"]),
    ]
    log_ends = [("a", p, 0, 10, TS, "r1") for p in range(4)] + [("b", p, 0, 10, TS, "r1") for p in range(3)]
    # ZooKeeper knows b: 2 partitions
    zk_tp = [("b", p, None, [1], 1, 0, [1], None, None, None, "r1") for p in range(2)]
    gm = spark.createDataFrame(meta, table_schema("raw/group_metadata", True))
    mem = spark.createDataFrame(members, table_schema("raw/group_members", True))
    le = spark.createDataFrame(log_ends, table_schema("raw/log_end_offsets", True))
    tp = spark.createDataFrame(zk_tp, table_schema("core/topic_partitions", True))

    latest = ak.latest_groups(gm)
    got = ak.expected_assignment(ak.latest_members(latest, mem), ak.topic_partitions(tp, le)).select(
        "group_id", "topic", "partition", "expected_owner", "assignor"
    )
    nr = "cooperative-sticky: not recomputed"
    want = [
        # range over 4 partitions of a (from log ends): inst-a (m-y), inst-b (m-z), then m-a
        ("st", "a", 0, "m-y", "range"),
        ("st", "a", 1, "m-y", "range"),
        ("st", "a", 2, "m-z", "range"),
        ("st", "a", 3, "m-a", "range"),
        # round robin over a0..a3, b0, b1 (ZooKeeper's count for b), r2 reads only b
        ("rr", "a", 0, "r1", "roundrobin"),
        ("rr", "a", 1, "r1", "roundrobin"),
        ("rr", "a", 2, "r1", "roundrobin"),
        ("rr", "a", 3, "r1", "roundrobin"),
        ("rr", "b", 0, "r2", "roundrobin"),
        ("rr", "b", 1, "r1", "roundrobin"),
        ("sticky", "b", 0, None, nr),
        ("sticky", "b", 1, None, nr),
    ]
    assertDataFrameEqual(got, want)
