"""A real Streams group (Kafka 4.2.2 broker and Kafka Streams 4.2.2, ``pipelines/demo/real/
streams-4.2.2``): kaudit's decoder and ``pipelines.spark.streams_groups`` on the broker's
``__consumer_offsets``, against what ``describeStreamsGroups`` and ``listStreamsGroupOffsets``
answered (``oracle.json``). The group is healthy: no finding."""

from __future__ import annotations

import json
from pathlib import Path

from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from pipelines.spark import streams_groups as S
from pipelines.spark.schemas import table_schema

# the one copy of the demo's real data dirs (pipelines/demo/real/README.md)
FIXTURE = Path(__file__).resolve().parents[3] / "pipelines" / "demo" / "real" / "streams-4.2.2"


def _tables():
    out: dict[str, list[dict]] = {}
    for scope in sorted({s.scope for s in offsets_segments([FIXTURE / "logs"])}):
        tables, _ = decode_scope([s for s in offsets_segments([FIXTURE / "logs"]) if s.scope == scope])
        for t, data in tables.items():
            out.setdefault(t, []).extend(data.to_pylist())
    return out


def test_real_streams_group_matches_the_cluster(spark):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    group = oracle["group"]
    raw = _tables()
    assert not raw["raw/quarantine"]
    records = [r for r in raw["raw/group_coordinator_records"] if r["group_id"] == group["group_id"]]
    assert records and all(r["fields"] is not None or r["is_tombstone"] for r in records)  # every value decoded
    # the committed offsets: the latest commit of each partition
    commits = {}
    for c in sorted(raw["raw/offset_commits"], key=lambda c: c["log_offset"]):
        commits[f"{c['topic']}:{c['partition']}"] = c["committed_offset"]
    assert commits == oracle["committed"]

    frame = spark.createDataFrame(records, table_schema("raw/group_coordinator_records"))
    topo = S.topology(frame).collect()
    roles = {"source": "source_topics", "repartition_sink": "repartition_sink_topics",
             "changelog": "state_changelog_topics", "repartition_source": "repartition_source_topics"}
    ours = {(r.subtopology_id, roles[r.role], r.topic) for r in topo}
    theirs = {(s, k, t) for s, d in group["subtopologies"].items() for k, ts in d.items() for t in ts}
    assert ours == theirs and {r.topology_epoch for r in topo} == {group["topology_epoch"]}

    tasks = S.tasks(frame)
    current = {}
    for r in tasks.where("assignment = 'current' and not pending_revocation").collect():
        m = current.setdefault(r.member_id, {"member_epoch": r.member_epoch, "process_id": r.process_id,
                                             "client_id": r.client_id, "active": [], "standby": [], "warmup": []})
        m[r.task_kind].append(f"{r.subtopology_id}_{r.partition}")
        assert (r.assignment_epoch, r.group_epoch) == (group["assignment_epoch"], group["group_epoch"])
    assert {k: {**v, **{t: sorted(v[t]) for t in S.KINDS}} for k, v in current.items()} == {
        m["member_id"]: {"member_epoch": m["member_epoch"], "process_id": m["process_id"], "client_id": m["client_id"],
                         **{t: sorted(m[t]) for t in S.KINDS}} for m in group["members"]}

    parts = spark.createDataFrame([(tp.split(":")[0], int(tp.split(":")[1])) for tp in oracle["log_end_offsets"]],
                                  "topic string, partition int")
    assert S.findings(tasks, S.topology(frame), parts).collect() == []
