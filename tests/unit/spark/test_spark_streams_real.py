"""Streams groups of a real cluster (Kafka 4.2.2 broker and Kafka Streams 4.2.2, ``pipelines/demo/real/
streams-4.2.2``): kaudit's decoder and ``pipelines.spark.streams_groups`` on the broker's
``__consumer_offsets``, against what ``describeStreamsGroups`` and ``listStreamsGroupOffsets``
answered (``oracle.json``) just before the broker stopped, and what the scenario did.

``counts-app`` is healthy: no finding. ``faulty-app``: a third instance joined, and the member
that had to hand an active task over to it was killed (SIGKILL of its JVM) before it did; the
coordinator still counted it when the broker stopped (inside the session timeout) while the
other members reconciled and committed: ``member_unresponsive`` on each active task it held,
nothing else."""

from __future__ import annotations

import json

from pipelines.demo import REAL
from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from pipelines.spark import streams_groups as S
from pipelines.spark.schemas import table_schema
from testkit.cluster.share_streams_oracle import compare_streams, latest_commits

FIXTURE = REAL / "streams-4.2.2"


def _tables():
    out: dict[str, list[dict]] = {}
    for scope in sorted({s.scope for s in offsets_segments([FIXTURE / "logs"])}):
        tables, _ = decode_scope([s for s in offsets_segments([FIXTURE / "logs"]) if s.scope == scope])
        for t, data in tables.items():
            out.setdefault(t, []).extend(data.to_pylist())
    return out


def test_real_streams_groups_match_the_cluster(spark):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    healthy, faulty, did = oracle["group"], oracle["faulty"]["group"], oracle["faulty"]["did"]
    raw = _tables()
    assert not raw["raw/quarantine"]
    records = [r for r in raw["raw/group_coordinator_records"] if r["group_id"] in (healthy["group_id"], "faulty-app")]
    assert records and all(r["fields"] is not None or r["is_tombstone"] for r in records)  # every value decoded
    # the committed offsets: the latest commit of each group and partition
    assert latest_commits(raw["raw/offset_commits"]) == {healthy["group_id"]: oracle["committed"],
                                                        faulty["group_id"]: oracle["faulty"]["committed"]}

    frame = spark.createDataFrame(records, table_schema("raw/group_coordinator_records"))
    topo, tasks = S.topology(frame), S.tasks(frame)
    tables = {"core/streams_group_topology": [r.asDict() for r in topo.collect()],
              "core/streams_group_tasks": [r.asDict() for r in tasks.collect()]}
    assert compare_streams(tables, healthy) + compare_streams(tables, faulty) > 60
    # the cluster still counted the killed member, behind the assignment epoch, with the tasks it held
    killed = next(m for m in faulty["members"] if m["member_id"] == did["killed_member_id"])
    assert killed["member_epoch"] < faulty["assignment_epoch"] and killed["active"] == did["killed_held_active"]
    assert faulty["state"] == "Reconciling" and healthy["state"] == "Stable"

    ends = {**oracle["log_end_offsets"], **oracle["faulty"]["log_end_offsets"]}
    parts = spark.createDataFrame([(tp.split(":")[0], int(tp.split(":")[1])) for tp in ends],
                                  "topic string, partition int")
    group_commits = spark.createDataFrame(raw["raw/offset_commits"], table_schema("raw/offset_commits"))
    found = S.findings(tasks, topo, parts, S.unresponsive(frame, group_commits, tasks)).collect()
    assert sorted((f.group_id, f.member_id, f.finding, f"{f.subtopology_id}_{f.partition}") for f in found) == [
        ("faulty-app", did["killed_member_id"], "member_unresponsive", t) for t in sorted(did["killed_held_active"])]
    # the tasks nobody processes fell behind: their source partitions' lag is the records produced after the kill
    lag = {tp: ends[tp] - c for tp, c in oracle["faulty"]["committed"].items() if tp in ends}
    stalled = {f"{did['input']}:{t.split('_')[1]}" for t in did["killed_held_active"] if t.startswith("0_")}
    assert {tp for tp, n in lag.items() if n > 0} == stalled


def test_real_streams_group_history(spark):
    """Every assignment epoch of both groups audited: the last one as the cluster described it
    when the broker stopped (the healthy group settled, the faulty one still reconciling with
    the members that reached it), the faulty group's epoch before the third instance settled (as
    described then), no target with an active task twice or a standby beside its active, and
    every unsettled epoch before the last a transition."""
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    records = [r for r in _tables()["raw/group_coordinator_records"] if r["group_id"] in ("counts-app", "faulty-app")]
    rows = [r.asDict() for r in S.epochs(
        spark.createDataFrame(records, table_schema("raw/group_coordinator_records"))).collect()]
    before = oracle["faulty"]["did"]["before"]
    for group in (oracle["group"], oracle["faulty"]["group"], before):
        mine = sorted((r for r in rows if r["group_id"] == group["group_id"]), key=lambda r: r["log_offset"])
        at = [r for r in mine if r["assignment_epoch"] == group["assignment_epoch"]]
        assert len(at) == 1, (group["group_id"], mine)
        reached = [m for m in group["members"] if m["member_epoch"] == group["assignment_epoch"]
                   and all(sorted(m[k]) == sorted(m["target"][k]) for k in S.KINDS)]
        assert (at[0]["members"], at[0]["members_settled"]) == (len(group["members"]), len(reached))
        assert at[0]["settled"] == (group["state"] == "Stable")
        if group is not before:
            assert at[0] is mine[-1] and at[0]["is_transition"] is (False if at[0]["settled"] else None)
        assert all(r["is_transition"] is (not r["settled"]) for r in mine[:-1])
    assert rows and all(r["active_targeted_twice"] == r["standby_with_active"] == 0 for r in rows)
