"""Streams groups' topology, tasks and findings (pipelines.spark.streams_groups) from streams
group records built field by field with testkit.kip848 (Kafka's schemas, not kaudit's decoder)
into a __consumer_offsets segment, decoded by kaudit's offsets decoder. The expected tasks and
findings are what the records say: the faults are planted here."""

from __future__ import annotations

from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from pipelines.spark import streams_groups as S
from pipelines.spark.schemas import table_schema
from testkit import kip848 as G
from testkit.segments import batch, segment_name, write_segment

T0 = 1_700_000_000_000
SUB = dict(regexes=[], changelogs=[("app-store-changelog", 3, 1, {})], sinks=[], repartition_sources=[], copartition=[])
MEMBER = dict(instance_id=None, rack_id=None, client_host="/127.0.0.1", rebalance_timeout_ms=30000, topology_epoch=1,
              user_endpoint=None, client_tags={})


def _records(spark, tmp_path):
    records = [
        G.streams_group_metadata("app", 12, 7, {}),
        G.streams_topology("app", 1, [dict(id="0", sources=["orders"], **SUB),
                                      dict(id="1", sources=["payments"], **{**SUB, "changelogs": []})]),
        G.streams_member_metadata("app", "m1", client_id="c1", process_id="p1", **MEMBER),
        G.streams_member_metadata("app", "m2", client_id="c2", process_id="p2", **MEMBER),
        G.streams_target_metadata("app", 10),
        # target: sub 1's task 0 goes to nobody
        G.streams_target_member("app", "m1", {"0": [0, 1]}, {"0": [2]}, {}),
        G.streams_target_member("app", "m2", {"0": [2]}, {"0": [0]}, {}),
        # current: m1 holds 0_0 active and standby; m2 holds 0_1 active as m1 does; m2's epoch is ahead
        G.streams_current_member("app", "m1", epoch=10, previous_epoch=9, state=0,
                                 tasks=({"0": [0, 1]}, {"0": [0, 2]}, {}), pending=({}, {}, {})),
        G.streams_current_member("app", "m2", epoch=11, previous_epoch=10, state=0,
                                 tasks=({"0": [1, 2]}, {}, {}), pending=({"0": [0]}, {}, {})),
    ]
    write_segment(tmp_path / "__consumer_offsets-0" / segment_name(0), [batch(records, base_offset=0, timestamp_ms=T0)])
    tables, _ = decode_scope(offsets_segments([tmp_path]))
    table = "raw/group_coordinator_records"
    return spark.createDataFrame(tables[table].to_pylist(), table_schema(table))


def test_topology_tasks_and_findings(spark, tmp_path):
    records = _records(spark, tmp_path)
    topo = S.topology(records)
    assert sorted((r.subtopology_id, r.topic, r.role, r.partitions) for r in topo.collect()) == [
        ("0", "app-store-changelog", "changelog", 3), ("0", "orders", "source", None),
        ("1", "payments", "source", None)]
    tasks = S.tasks(records)
    got = sorted((r.member_id, r.assignment, r.task_kind, r.subtopology_id, r.partition, r.pending_revocation,
                  r.member_epoch, r.assignment_epoch, r.group_epoch, r.process_id) for r in tasks.collect())
    assert got == sorted([
        ("m1", "current", "active", "0", 0, False, 10, 10, 12, "p1"),
        ("m1", "current", "active", "0", 1, False, 10, 10, 12, "p1"),
        ("m1", "current", "standby", "0", 0, False, 10, 10, 12, "p1"),
        ("m1", "current", "standby", "0", 2, False, 10, 10, 12, "p1"),
        ("m2", "current", "active", "0", 1, False, 11, 10, 12, "p2"),
        ("m2", "current", "active", "0", 2, False, 11, 10, 12, "p2"),
        ("m2", "current", "active", "0", 0, True, 11, 10, 12, "p2"),
        ("m1", "target", "active", "0", 0, False, None, 10, 12, "p1"),
        ("m1", "target", "active", "0", 1, False, None, 10, 12, "p1"),
        ("m1", "target", "standby", "0", 2, False, None, 10, 12, "p1"),
        ("m2", "target", "active", "0", 2, False, None, 10, 12, "p2"),
        ("m2", "target", "standby", "0", 0, False, None, 10, 12, "p2"),
    ])
    parts = spark.createDataFrame([("orders", p) for p in range(3)] + [("payments", 0)], "topic string, partition int")
    found = sorted((r.finding, r.member_id, r.subtopology_id, r.partition)
                   for r in S.findings(tasks, topo, parts).collect())
    assert found == [
        ("active_task_held_twice", None, "0", 1),
        ("active_task_unassigned", None, "1", 0),
        ("member_epoch_ahead", "m2", None, None),
        ("standby_with_active", "m1", "0", 0),
    ]


def _silent_case(spark, tmp_path, last_commit_after_ms):
    """m1 stable at epoch 10 (its record at T0); at T0+1 s m2 joins, epoch 11 gives m2 the task
    0_1 m1 holds; m2 reconciles at once, m1 writes nothing more; the group's last commit comes
    ``last_commit_after_ms`` after epoch 11's target."""
    from testkit.segments import offset_commit_key, offset_commit_value

    at = T0 + 1_000
    first = [
        G.streams_group_metadata("app", 10, 1, {}),
        G.streams_topology("app", 1, [dict(id="0", sources=["orders"], **SUB)]),
        G.streams_member_metadata("app", "m1", client_id="c1", process_id="p1", **MEMBER),
        G.streams_target_metadata("app", 10),
        G.streams_target_member("app", "m1", {"0": [0, 1]}, {}, {}),
        G.streams_current_member("app", "m1", epoch=10, previous_epoch=9, state=0,
                                 tasks=({"0": [0, 1]}, {}, {}), pending=({}, {}, {})),
    ]
    second = [
        G.streams_group_metadata("app", 11, 1, {}),
        G.streams_member_metadata("app", "m2", client_id="c2", process_id="p2", **MEMBER),
        G.streams_target_member("app", "m1", {"0": [0]}, {}, {}),
        G.streams_target_member("app", "m2", {"0": [1]}, {}, {}),
        G.streams_target_metadata("app", 11),
        G.streams_current_member("app", "m2", epoch=11, previous_epoch=0, state=2,
                                 tasks=({}, {}, {}), pending=({}, {}, {})),
    ]
    commit = [(offset_commit_key("app", "orders", 0), offset_commit_value(5, commit_ts=at + last_commit_after_ms))]
    write_segment(tmp_path / "__consumer_offsets-0" / segment_name(0), [
        batch(first, base_offset=0, timestamp_ms=T0), batch(second, base_offset=len(first), timestamp_ms=at),
        batch(commit, base_offset=len(first) + len(second), timestamp_ms=at + last_commit_after_ms)])
    tables, _ = decode_scope(offsets_segments([tmp_path]))
    records = spark.createDataFrame(tables["raw/group_coordinator_records"].to_pylist(),
                                    table_schema("raw/group_coordinator_records"))
    commits = spark.createDataFrame(tables["raw/offset_commits"].to_pylist(), table_schema("raw/offset_commits"))
    tasks = S.tasks(records)
    return [(r.member_id, r.finding, r.subtopology_id, r.partition)
            for r in S.unresponsive(records, commits, tasks).collect()]


def test_member_silent_past_two_heartbeats_is_unresponsive(spark, tmp_path):
    # m1 never came back for epoch 11 while the group went on 12 s: it holds 0_0 and 0_1 unprocessed
    assert sorted(_silent_case(spark, tmp_path, 12_000)) == [
        ("m1", "member_unresponsive", "0", 0), ("m1", "member_unresponsive", "0", 1)]


def test_member_reconciling_within_the_heartbeats_is_a_transition(spark, tmp_path):
    assert _silent_case(spark, tmp_path, S.SILENT_MS - 1_000) == []


def test_no_streams_group_is_no_row(spark):
    # a run without streams groups (the build always computes the streams tables)
    records = spark.createDataFrame([], table_schema("raw/group_coordinator_records"))
    commits = spark.createDataFrame([], table_schema("raw/offset_commits"))
    parts = spark.createDataFrame([], "topic string, partition int")
    tasks, topo = S.tasks(records), S.topology(records)
    assert S.findings(tasks, topo, parts, S.unresponsive(records, commits, tasks)).count() == 0
    assert S.epochs(records).count() == 0
