"""Every assignment epoch of share groups (pipelines.spark.share_epochs).

On the ``__consumer_offsets`` a real Kafka 4.2.2 broker wrote for two share groups
(``pipelines/demo/real/share-4.2.2``): the last epoch as ``describeShareGroups`` answered before
the broker stopped (``oracle.json``), and no fault in any epoch (the scenario planted none in
the assignment). On records written here field by field (the fields as Kafka's JSON names
them): a settled epoch, a transition, a settled epoch whose target leaves a partition to nobody
and gives another to two members although there are fewer members than partitions, the last
epoch still reconciling, mixed subscriptions and a group without state partition metadata."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from pipelines.demo import REAL
from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from pipelines.spark import share_epochs as E
from pipelines.spark.schemas import table_schema

FIXTURE = REAL / "share-4.2.2"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TYPES = {"ShareGroupMemberMetadata": 10, "ShareGroupMetadata": 11, "ShareGroupTargetAssignmentMetadata": 12,
         "ShareGroupTargetAssignmentMember": 13, "ShareGroupCurrentMemberAssignment": 14,
         "ShareGroupStatePartitionMetadata": 15}


def _real_records() -> list[dict]:
    segments = offsets_segments([FIXTURE / "logs"])
    out = []
    for scope in sorted({s.scope for s in segments}):
        tables, _ = decode_scope([s for s in segments if s.scope == scope])
        out += tables["raw/group_coordinator_records"].to_pylist()
    return out


@pytest.fixture(scope="module")
def epoch_rows(spark) -> list[dict]:
    """core/share_group_epochs of the real groups and of the groups written here, in one job."""
    frame = spark.createDataFrame(_real_records() + _written().rows, table_schema("raw/group_coordinator_records"))
    return [r.asDict() for r in E.epochs(frame).collect()]


def test_real_share_group_epochs(epoch_rows):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    rows = [r for r in epoch_rows if r["group_id"].startswith("share-")]
    assert {r["group_id"] for r in rows} == set(oracle["groups"])
    for group, d in oracle["groups"].items():
        mine = sorted((r for r in rows if r["group_id"] == group), key=lambda r: r["log_offset"])
        last = mine[-1]
        # the epoch the cluster described: every member, how many reached it, its partitions
        assert last["assignment_epoch"] == d["assignment_epoch"]
        assert [r["assignment_epoch"] for r in mine] == list(range(1, d["assignment_epoch"] + 1))
        assert last["members"] == len(d["members"])
        assert last["member_ids"] == sorted(m["member_id"] for m in d["members"])
        assert last["members_settled"] == sum(m["member_epoch"] == d["assignment_epoch"] for m in d["members"])
        assert last["settled"] == (d["state"] == "Stable") and last["is_transition"] is (
            False if last["settled"] else None)
        held = [tp for m in d["members"] for tp in m["assignment"]]
        assert last["partitions_targeted"] == len(set(held))
        assert last["partitions_shared"] == sum(held.count(tp) > 1 for tp in set(held))
        topic = oracle["did"]["topic"]
        assert last["partitions_assignable"] == sum(tp.split(":")[0] == topic for tp in oracle["log_end_offsets"])
        assert last["settle_ms"] >= 0 and last["settled_at"] >= last["target_at"]
        # no epoch of the scenario's groups left an assignable partition to nobody or over-shared one
        assert all(r["partitions_unassigned"] in (0, None) and r["partitions_over_shared"] in (0, None)
                   for r in mine), mine
        assert all(r["is_transition"] is (not r["settled"]) for r in mine[:-1])


class _Log:
    """Share group records of one ``__consumer_offsets`` partition, one second apart."""

    def __init__(self):
        self.rows: list[dict] = []

    def add(self, record_type: str, group: str, member: str | None = None, fields: dict | None = None) -> None:
        n = len(self.rows)
        self.rows.append(dict(key_type=TYPES[record_type], record_type=record_type, group_id=group, member_id=member,
                              fields=None if fields is None else json.dumps(fields), value=None,
                              is_tombstone=fields is None, value_version=0, offsets_partition=0, log_offset=n,
                              segment_file="00000000000000000000.log", batch_timestamp=T0 + timedelta(seconds=n),
                              batch_offset=n))

    def member(self, group, member, topics):
        self.add("ShareGroupMemberMetadata", group, member, {"clientId": "c", "clientHost": "/127.0.0.1",
                                                           "rackId": None, "subscribedTopicNames": topics})

    def target(self, group, member, parts):
        self.add("ShareGroupTargetAssignmentMember", group, member,
                 None if parts is None else {"topicPartitions": [{"topicId": t, "partitions": p}
                                                                 for t, p in parts.items()]})

    def epoch(self, group, epoch):
        self.add("ShareGroupMetadata", group, None, {"epoch": epoch})
        self.add("ShareGroupTargetAssignmentMetadata", group, None, {"assignmentEpoch": epoch})

    def current(self, group, member, epoch, parts, state=E.STABLE):
        self.add("ShareGroupCurrentMemberAssignment", group, member, {
            "memberEpoch": epoch, "previousMemberEpoch": epoch - 1, "state": state,
            "assignedPartitions": [{"topicId": t, "partitions": p} for t, p in parts.items()]})

    def initialized(self, group, topics, initializing=()):
        def info(ts):
            return [{"topicId": f"id-{t}", "topicName": t, "partitions": list(range(n))} for t, n in ts]
        self.add("ShareGroupStatePartitionMetadata", group, None, {
            "initializingTopics": info(initializing), "initializedTopics": info(topics), "deletingTopics": []})


def _written() -> _Log:
    log = _Log()
    t = "id-t"
    # epoch 1: m1 alone, t's 4 partitions initialized, u's 2 still initializing: settled in 1 s
    log.member("g", "m1", ["t", "u"])
    log.initialized("g", [("t", 4)], initializing=[("u", 2)])
    log.target("g", "m1", {t: [0, 1, 2, 3]})
    log.epoch("g", 1)
    log.current("g", "m1", 1, {t: [0, 1, 2, 3]})
    # epoch 2: m2 joins; m1 reaches the epoch, m2 never does before epoch 3: a transition
    log.member("g", "m2", ["t", "u"])
    log.target("g", "m1", {t: [0, 1]})
    log.target("g", "m2", {t: [2, 3]})
    log.epoch("g", 2)
    log.current("g", "m1", 2, {t: [0, 1]})
    # epoch 3: m3 joins; the target leaves partition 3 to nobody and gives 2 to m2 and m3 with
    # 3 members for 4 partitions (the simple assignor shares none): settled, with both faults
    log.member("g", "m3", ["t", "u"])
    log.target("g", "m2", {t: [2]})
    log.target("g", "m3", {t: [2]})
    log.epoch("g", 3)
    for m, p in (("m1", [0, 1]), ("m2", [2]), ("m3", [2])):
        log.current("g", m, 3, {t: p})
    # epoch 4: m3 left (its target deleted); nobody reached it yet: the last, still reconciling
    log.target("g", "m3", None)
    log.target("g", "m2", {t: [2, 3]})
    log.epoch("g", 4)
    log.current("g", "m1", 4, {t: [0, 1]}, state=2)  # not stable
    # mixed subscriptions: no bound on sharing; a group with no state partition metadata: unknown
    log.member("mixed", "a", ["t"])
    log.member("mixed", "b", ["t", "v"])
    log.initialized("mixed", [("t", 1), ("v", 1)])
    log.target("mixed", "a", {t: [0]})
    log.target("mixed", "b", {t: [0], "id-v": [0]})
    log.epoch("mixed", 1)
    log.member("bare", "x", ["t"])
    log.target("bare", "x", {})
    log.epoch("bare", 1)
    return log


def test_share_group_epochs_settled_transitions_and_faults(epoch_rows):
    cols = ("assignment_epoch", "members", "member_ids", "members_settled", "settled", "settle_ms", "is_transition",
            "partitions_targeted", "partitions_assignable", "partitions_initializing", "partitions_unassigned",
            "partitions_shared", "partitions_over_shared")
    got = {(r["group_id"], r["assignment_epoch"]): tuple(r[c] for c in cols) for r in epoch_rows
           if not r["group_id"].startswith("share-")}
    assert got == {
        ("g", 1): (1, 1, ["m1"], 1, True, 1000, False, 4, 4, 2, 0, 0, 0),
        ("g", 2): (2, 2, ["m1", "m2"], 1, False, None, True, 4, 4, 2, 0, 0, 0),
        ("g", 3): (3, 3, ["m1", "m2", "m3"], 3, True, 3000, False, 3, 4, 2, 1, 1, 1),
        ("g", 4): (4, 2, ["m1", "m2"], 0, False, None, None, 4, 4, 2, 0, 0, 0),
        ("mixed", 1): (1, 2, ["a", "b"], 0, False, None, None, 2, 2, 0, 0, 1, None),
        ("bare", 1): (1, 1, ["x"], 0, False, None, None, 0, None, None, None, 0, None),
    }
