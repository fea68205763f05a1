"""The MirrorMaker 2 failover audit (pipelines.spark.mm2) on hand-made syncs, checkpoints and
commits. The expected rows are worked out here by MirrorMaker's rule (OffsetSyncStore:
the newest sync at or below the offset; +1 unless exact; a rewind drops the syncs before it),
with the faults planted in the inputs."""

from __future__ import annotations

from pipelines.spark import mm2
from pipelines.spark.schemas import table_schema
from pipelines.warehouse.tables import MM2_FINDINGS, SCHEMAS


def frame(spark, table, rows):
    names = SCHEMAS[table].names
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], table_schema(table))


def syncs(spark, items):
    return frame(spark, "raw/mm2_offset_syncs", [
        dict(target_alias="t", topic=t, partition=p, upstream_offset=u, downstream_offset=d,
             syncs_topic="mm2-offset-syncs.t.internal", syncs_partition=0, log_offset=i)
        for i, (t, p, u, d) in enumerate(items)])


def checkpoints(spark, items):
    return frame(spark, "raw/mm2_checkpoints", [
        dict(source_alias="s", group_id=g, topic=t, partition=p, upstream_offset=u, downstream_offset=d,
             metadata="", value_version=0, checkpoints_topic="s.checkpoints.internal", checkpoints_partition=0,
             log_offset=i) for i, (g, t, p, u, d) in enumerate(items)])


def commits(spark, items):
    return frame(spark, "raw/offset_commits", [
        dict(group_id=g, topic=t, partition=p, committed_offset=None if o is None else o, is_tombstone=o is None,
             is_transactional=txn is not None, txn_state=txn, offsets_partition=0, log_offset=i)
        for i, (g, t, p, o, txn) in enumerate(items)])


def test_failover_rows_and_findings(spark):
    sy = syncs(spark, [("orders", 0, 0, 0), ("orders", 0, 100, 100), ("orders", 0, 200, 205),
                       ("orders", 1, 50, 50), ("orders", 1, 10, 3)])  # p1 rewinds: (50, 50) is unusable
    cp = checkpoints(spark, [
        ("g1", "s.orders", 0, 150, 1),  # from the sync (0, 0): an older one, superseded below
        ("g1", "s.orders", 0, 150, 101),  # exact
        ("g2", "s.orders", 0, 200, 210),  # planted: the sync (200, 205) says 205
        ("g1", "s.orders", 1, 60, 51),  # from the sync before the rewind: past the recompute (4)
        ("g5", "s.orders", 0, 100, 100),  # a group with no offset on the source any more
        ("g6", "s.orders", 0, 100, 100),  # older_sync below
        ("g6", "s.orders", 0, 130, 1),  # via (0, 0): older, but correct
    ])
    src = commits(spark, [("g1", "orders", 0, 150, None), ("g1", "orders", 1, 60, None),
                          ("g2", "orders", 0, 200, None), ("g3", "orders", 0, 120, None),
                          ("g3", "orders", 0, 999, "aborted"),  # never became an offset
                          ("g4", "other", 0, 5, None),  # not replicated: no row
                          ("g5", "orders", 0, 7, None), ("g5", "orders", 0, None, None),  # deleted
                          ("g6", "orders", 0, 130, None)])
    tgt = commits(spark, [("g1", "s.orders", 0, 101, None), ("g1", "s.orders", 1, 51, None),
                          ("g2", "s.orders", 0, 205, None), ("g6", "s.orders", 0, 1, None)])
    rows = mm2.failover(src, tgt, sy, cp, "s", "t")
    got = {(r.group_id, r.topic, r.partition): r.asDict() for r in rows.collect()}
    cols = ("source_committed_offset", "translated_offset", "expected_target_offset", "checkpoint_downstream_offset",
            "checkpoint_recomputed_offset", "checkpoint_status", "target_committed_offset", "records_reread",
            "records_skipped")
    want = {
        ("g1", "orders", 0): (150, 101, 150, 101, 101, "exact", 101, 49, 0),
        ("g1", "orders", 1): (60, 4, 53, 51, 4, "disagrees", 51, 2, 0),
        ("g2", "orders", 0): (200, 205, 205, 210, 205, "disagrees", 205, 0, 0),
        ("g3", "orders", 0): (120, 101, 120, None, None, None, None, None, None),
        ("g5", "orders", 0): (None, None, None, 100, 100, "exact", None, None, None),
        ("g6", "orders", 0): (130, 101, 130, 1, 101, "older_sync", 1, 129, 0),
    }
    assert {k: tuple(v[c] for c in cols) for k, v in got.items()} == want
    assert all(v["target_topic"] == "s.orders" and (v["source_alias"], v["target_alias"]) == ("s", "t")
               for v in got.values())
    found = sorted((r.finding, r.group_id, r.partition) for r in mm2.findings(rows).collect())
    assert found == [("checkpoint_disagrees", "g1", 1), ("checkpoint_disagrees", "g2", 0),
                     ("never_checkpointed", "g3", 0), ("target_ahead_of_translation", "g1", 1)]
    assert set(f for f, _, _ in found) == set(MM2_FINDINGS)


def test_extreme_offsets_and_empty_inputs(spark):
    big = 2**63 - 2
    sy = syncs(spark, [("t", 0, big, big)])
    src = commits(spark, [("g", "t", 0, big, None)])
    rows = mm2.failover(src, commits(spark, []), sy, checkpoints(spark, []), "s", "t").collect()
    assert [(r.translated_offset, r.expected_target_offset, r.records_reread) for r in rows] == [(big, big, None)]
    empty = mm2.failover(commits(spark, []), commits(spark, []), syncs(spark, []), checkpoints(spark, []), "s", "t")
    assert empty.count() == 0 and mm2.findings(empty).count() == 0
