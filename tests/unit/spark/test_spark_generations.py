"""Kafka-era rebalance states (issue 21): every generation of a classic group and every epoch of
a KIP-848 group, its trigger, its expected assignment and the audit of what was written. Every
expected row is worked out by hand in the comments from the records the test scripts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from pipelines.spark import assignment_kip848
from pipelines.spark import generations as G
from pipelines.spark.schemas import table_schema

T0 = datetime(2024, 1, 1, tzinfo=UTC)
STATE_COLS = ["group_id", "generation", "log_offset", "trigger", "next_log_offset", "settled", "settled_log_offset",
              "expected_partitions", "double_claimed_partitions", "wrong_owner_partitions", "unowned_at_end"]
AUDIT_COLS = ["group_id", "log_offset", "partition", "expected_owner", "observed_owner", "status"]


def _cols(rows: list[Row], cols: list[str]) -> list[Row]:
    """The collected ``rows`` cut to ``cols`` (one Spark job per frame: the plans are long)."""
    return [Row(**{c: r[c] for c in cols}) for r in rows]


def _df(spark, table, rows):
    return spark.createDataFrame(rows, table_schema(table, with_run_id=True))


def _classic(spark):
    """Group g on range over t (4 partitions, from the log ends), offsets partition 0."""
    meta, members, assigns = [], [], []

    def record(lo, gen, owners: dict[str, list[int]], protocol="range", tombstone=False):
        ts = None if tombstone else T0 + timedelta(minutes=lo)
        meta.append(("g", None if tombstone else gen, None if tombstone else "consumer", protocol, None, ts,
                     tombstone, None if tombstone else 3, 0, lo, "f.log", "r1"))
        for m, parts in owners.items():
            members.append(("g", gen, 0, lo, m, None, "c", "/h", 10000, 30000, ["t"], "r1"))
            assigns.extend(("g", gen, 0, lo, m, "t", p, "r1") for p in parts)

    record(1, 1, {"a": [0, 1, 2, 3]})  # first: a alone gets everything
    record(2, 2, {"a": [0, 1], "b": [2, 3]})  # b joined: range a 0-1, b 2-3
    record(3, 2, {"a": [0, 1], "b2": [2, 3]})  # same generation (b's new member id): still state 2
    record(4, 3, {"a": [0, 1, 2], "b2": [2, 3]})  # same members; 2 claimed by both
    record(5, 4, {"b2": [0], "c": [1, 3]})  # a left, c joined: range b2 0-1, c 2-3 -> 1 wrong, 2 unowned
    record(6, None, {}, tombstone=True)  # the group deleted
    record(7, 0, {"a": [0, 1, 2, 3]})  # recreated: first again
    log_ends = [("t", p, 0, 10, T0, "r1") for p in range(4)]
    return (_df(spark, "raw/group_metadata", meta), _df(spark, "raw/group_members", members),
            _df(spark, "raw/group_assignments", assigns), _df(spark, "raw/log_end_offsets", log_ends))


def test_classic_generations_triggers_and_audit(spark):
    from pipelines.spark.assignment_kafka import topic_partitions

    meta, members, assigns, log_ends = _classic(spark)
    tp = spark.createDataFrame([], table_schema("core/topic_partitions", True))
    classic = G.classic_generations(meta, members, assigns, topic_partitions(tp, log_ends))
    states, audited = classic.states.collect(), classic.audit.collect()
    # settled: nothing followed the generation's last record for the settle window (8 s; the
    # records are a minute apart); the generation ended by the group's deletion has no known end
    # (a tombstone carries no time), and the last one ends the history (no time after it)
    assertDataFrameEqual(_cols(states, STATE_COLS), [
        ("g", 1, 1, "first", 2, True, 1, 4, 0, 0, 0),
        ("g", 2, 2, "member_joined", 4, True, 3, 4, 0, 0, 0),
        ("g", 3, 4, "same_members", 5, True, 4, 4, 1, 0, 0),
        ("g", 4, 5, "members_replaced", 6, False, None, 4, 0, 1, 1),
        ("g", 0, 7, "first", None, False, None, 4, 0, 0, 0),
    ])
    # started_at is the record's state timestamp; the state before the tombstone has no end time
    naive = T0.replace(tzinfo=None)  # collect() gives UTC wall times
    got = {r["log_offset"]: (r["started_at"], r["next_at"], r["group_protocol"]) for r in states}
    assert got[2] == (naive + timedelta(minutes=2), naive + timedelta(minutes=4), "classic")
    assert got[5] == (naive + timedelta(minutes=5), None, "classic")
    assertDataFrameEqual(_cols([r for r in audited if r["status"] != "ok"], AUDIT_COLS), [
        ("g", 4, 2, "b2", "a, b2", "duplicate_owner"),
        ("g", 5, 1, "b2", "c", "wrong_owner"),
        ("g", 5, 2, "c", None, "unowned"),
    ])
    # the double claim lasted a settled minute: a finding; the unsettled state's rows are not
    assert {(r["log_offset"], r["settled"]) for r in audited if r["status"] != "ok"} == {(4, True), (5, False)}
    # state 2 is audited with its last record's members (b2, not b)
    assert {r["observed_owner"] for r in audited if r["log_offset"] == 2} == {"a", "b2"}


def _tp(parts: dict[str, list[int]]):
    return [dict(topic_id=t, partitions=p) for t, p in parts.items()]


def _place(lo, tombstone=False, batch=None):
    """A record's place: offsets partition 0, log offset ``lo``, in a batch of its own unless
    ``batch`` names the base offset of the batch it shares."""
    return (tombstone, None if tombstone else 0, 0, lo, "f.log", None, lo if batch is None else batch, "r1")


def _epochs(spark, meta, members, tmeta, targets, current, partitions: int):
    """(``core/rebalance_states``, ``core/settled_audit``) rows, collected, of the KIP-848
    records given over orders (id o, ``partitions`` partitions)."""
    raw = {
        "raw/consumer_group_metadata": _df(spark, "raw/consumer_group_metadata", meta),
        "raw/consumer_group_partition_metadata": _df(spark, "raw/consumer_group_partition_metadata", []),
        "raw/consumer_group_members": _df(spark, "raw/consumer_group_members", members),
        "raw/consumer_group_target_metadata": _df(spark, "raw/consumer_group_target_metadata", tmeta),
        "raw/consumer_group_target_assignments": _df(spark, "raw/consumer_group_target_assignments", targets),
        "raw/consumer_group_current_assignments": _df(spark, "raw/consumer_group_current_assignments", current),
        "raw/consumer_group_regexes": _df(spark, "raw/consumer_group_regexes", []),
    }
    tp = _df(spark, "core/topic_partitions",
             [("orders", p, None, [1], 1, 0, [1], "o", None, None, "r1") for p in range(partitions)])
    states, audited = G.consumer_states(raw, tp, assignment_kip848.state(raw, tp))
    return states.collect(), audited.collect()


def _member(m: str, lo: int) -> tuple:
    return ("k", m, None, None, "c", "/h", ["orders"], None, 30000, "uniform", None, *_place(lo))


def test_kip848_epochs_settle_when_every_targeted_member_is_stable(spark):
    """Group k over orders (id o, 2 partitions). Epoch 1: m1 targeted 0-1, stable at lo 13.
    Epoch 2 (m2 joined): target m1 0, m2 1; m1 revokes 1 (lo 23), m2 waits (lo 24), both stable
    at lo 25 and 26. Epoch 3: target m1 0-1, m2 nothing; m1 stable at lo 33, m2 never
    acknowledges, so partition 1 ends held by both."""
    meta = [("k", 1, *_place(10)), ("k", 2, *_place(20)), ("k", 3, *_place(30))]

    members = [_member("m1", 9), _member("m2", 19)]
    tmeta = [("k", 1, *_place(12)), ("k", 2, *_place(22)), ("k", 3, *_place(32))]
    targets = [("k", "m1", _tp({"o": [0, 1]}), *_place(11)),
               ("k", "m1", _tp({"o": [0]}), *_place(21)), ("k", "m2", _tp({"o": [1]}), *_place(21)),
               ("k", "m1", _tp({"o": [0, 1]}), *_place(31)), ("k", "m2", _tp({}), *_place(31))]

    def cur(m, lo, epoch, state, assigned, pending=None):
        return ("k", m, epoch, epoch - 1, state, _tp(assigned), _tp(pending or {}), *_place(lo))

    current = [cur("m1", 13, 1, "STABLE", {"o": [0, 1]}),
               cur("m1", 23, 2, "UNREVOKED_PARTITIONS", {"o": [0]}, {"o": [1]}),
               cur("m2", 24, 2, "UNRELEASED_PARTITIONS", {}),
               cur("m1", 25, 2, "STABLE", {"o": [0]}),
               cur("m2", 26, 2, "STABLE", {"o": [1]}),
               cur("m1", 33, 3, "STABLE", {"o": [0, 1]})]
    states, audited = _epochs(spark, meta, members, tmeta, targets, current, 2)
    assertDataFrameEqual(_cols(states, STATE_COLS), [
        ("k", 1, 10, "first", 20, True, 13, 2, 0, 0, 0),
        ("k", 2, 20, "member_joined", 30, True, 26, 2, 0, 0, 0),
        ("k", 3, 30, "same_members", None, False, None, 2, 1, 0, 0),
    ])
    assert {r["group_protocol"] for r in states} == {"consumer"}
    assertDataFrameEqual(_cols([r for r in audited if r["status"] != "ok"], AUDIT_COLS), [
        ("k", 30, 1, "m1", "m1, m2", "duplicate_owner"),
    ])
    assert sum(r["log_offset"] == 20 for r in audited) == 2


def test_kip848_members_that_left_cleanly_are_no_expected_owners(spark):
    """Group k over orders (id o, 3 partitions). Epoch 1: m1, m2, m3 targeted 0, 1, 2 and
    holding them. m2 and m3 leave cleanly: their current assignment, target and member records
    tombstoned (lo 21-26); epoch 2 (lo 30) targets m1 0-2, which m1 holds at lo 33. Nobody is
    expected to own what m2 and m3 gave up: no row but ok, both epochs settled, nothing stuck."""
    meta = [("k", 1, *_place(10)), ("k", 2, *_place(30))]

    def gone(m, lo):
        return ("k", m, None, None, None, None, None, None, None, None, None, *_place(lo, tombstone=True))

    members = [_member("m1", 1), _member("m2", 2), _member("m3", 3), gone("m2", 23), gone("m3", 26)]
    tmeta = [("k", 1, *_place(12)), ("k", 2, *_place(32))]
    targets = [("k", "m1", _tp({"o": [0]}), *_place(11)), ("k", "m2", _tp({"o": [1]}), *_place(11)),
               ("k", "m3", _tp({"o": [2]}), *_place(11)),
               ("k", "m2", None, *_place(22, tombstone=True)), ("k", "m3", None, *_place(25, tombstone=True)),
               ("k", "m1", _tp({"o": [0, 1, 2]}), *_place(31))]

    def cur(m, lo, epoch, assigned):
        return ("k", m, epoch, epoch - 1, "STABLE", _tp(assigned), _tp({}), *_place(lo))

    def cur_gone(m, lo):
        return ("k", m, None, None, None, None, None, *_place(lo, tombstone=True))

    current = [cur("m1", 13, 1, {"o": [0]}), cur("m2", 14, 1, {"o": [1]}), cur("m3", 15, 1, {"o": [2]}),
               cur_gone("m2", 21), cur_gone("m3", 24), cur("m1", 33, 2, {"o": [0, 1, 2]})]
    states, audited = _epochs(spark, meta, members, tmeta, targets, current, 3)
    # epoch 1 settled when m1, the member still there at its end, held its target (lo 13)
    assertDataFrameEqual(_cols(states, STATE_COLS), [
        ("k", 1, 10, "first", 30, True, 13, 1, 0, 0, 0),
        ("k", 2, 30, "member_left", None, True, 33, 3, 0, 0, 0),
    ])
    assert [r["status"] for r in audited if r["status"] != "ok"] == []
    assert sorted((r["log_offset"], r["partition"], r["expected_owner"]) for r in audited) == [
        (10, 0, "m1"), (30, 0, "m1"), (30, 1, "m1"), (30, 2, "m1")]
    assert not any(r["stuck"] for r in states)


def test_kip848_epoch_settles_when_every_holding_matches_its_target(spark):
    """A STABLE record whose holding differs from its target does not settle the epoch: m1 is
    targeted 0-1 but writes STABLE holding 0 only (lo 13), then 0-1 (lo 15): settled at 15."""
    meta = [("k", 1, *_place(10))]
    members = [_member("m1", 9)]
    tmeta = [("k", 1, *_place(12))]
    targets = [("k", "m1", _tp({"o": [0, 1]}), *_place(11))]
    current = [("k", "m1", 1, 0, "STABLE", _tp({"o": [0]}), _tp({}), *_place(13)),
               ("k", "m1", 1, 0, "STABLE", _tp({"o": [1, 0]}), _tp({}), *_place(15))]
    (state,), _ = _epochs(spark, meta, members, tmeta, targets, current, 2)
    assert (state["settled"], state["settled_log_offset"]) == (True, 15)


def test_kip848_records_of_one_batch_are_one_operation(spark):
    """m1 and m2 hold their epoch-1 targets (0, 1). One batch (base 20) holds m2's tombstones
    (current, target, member: lo 20-22), epoch 2 (lo 23) and its target (m1 0-1, lo 24-25): epoch
    1 is seen as it was before that batch (m2 still there, holding its target: settled, all ok),
    epoch 2 settles when m1 holds 0-1 (lo 30). Epochs 3 and 4 share one batch (base 40): epoch 3
    began inside the operation that ended it and is never settled."""
    meta = [("k", 1, *_place(10)), ("k", 2, *_place(23, batch=20)), ("k", 3, *_place(40, batch=40)),
            ("k", 4, *_place(41, batch=40))]
    members = [_member("m1", 1), _member("m2", 2),
               ("k", "m2", None, None, None, None, None, None, None, None, None, *_place(22, True, batch=20))]
    tmeta = [("k", 1, *_place(12)), ("k", 2, *_place(25, batch=20))]
    targets = [("k", "m1", _tp({"o": [0]}), *_place(11)), ("k", "m2", _tp({"o": [1]}), *_place(11)),
               ("k", "m2", None, *_place(21, True, batch=20)), ("k", "m1", _tp({"o": [0, 1]}), *_place(24, batch=20))]

    def cur(m, lo, epoch, assigned, batch=None):
        return ("k", m, epoch, epoch - 1, "STABLE", _tp(assigned), _tp({}), *_place(lo, batch=batch))

    current = [cur("m1", 13, 1, {"o": [0]}), cur("m2", 14, 1, {"o": [1]}),
               ("k", "m2", None, None, None, None, None, *_place(20, True, batch=20)),
               cur("m1", 30, 2, {"o": [0, 1]})]
    states, audited = _epochs(spark, meta, members, tmeta, targets, current, 2)
    got = {r["generation"]: (r["settled"], r["settled_log_offset"]) for r in states}
    assert got == {1: (True, 14), 2: (True, 30), 3: (False, None), 4: (False, None)}
    # epoch 1's audit is of m1 and m2 before the batch that removed m2
    assert sorted((r["partition"], r["expected_owner"], r["observed_owner"], r["status"])
                  for r in audited if r["generation"] == 1) == [(0, "m1", "m1", "ok"), (1, "m2", "m2", "ok")]
    assert {r["settled"] for r in audited if r["generation"] == 3} <= {False}
