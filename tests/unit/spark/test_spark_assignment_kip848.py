"""KIP-848 groups: latest state with tombstones, topic ids named through the KRaft registry or
the group's partition metadata, the range target recomputed (hand-computed cases with instance
ids), uniform properties, epochs, partitions held twice, STABLE members off target, and the
audit statuses. Every expected row is worked out by hand in the comments."""

from __future__ import annotations

from pipelines.spark import assignment_kip848 as K
from pipelines.spark.audit import audit
from pipelines.spark.schemas import table_schema

A, B, T, Z, DEAD_T = "orders-id", "audit-id", "tiny-id", "zzz-unknown", "dead-id"


def _place(log_offset, tombstone=False):
    return (tombstone, None if tombstone else 0, 0, log_offset, "f.log", None, log_offset, "r1")


def _tp(parts: dict[str, list[int]]):
    return [dict(topic_id=t, partitions=p) for t, p in parts.items()]


def _member(g, m, lo, topics, instance=None, assignor="range", regex=None):
    return (g, m, instance, None, "c", "/h", topics, regex, 30000, assignor, None, *_place(lo))


def _current(g, m, lo, epoch, state, assigned, pending=None):
    return (g, m, epoch, epoch - 1, state, _tp(assigned), _tp(pending or {}), *_place(lo))


def _sorted(rows):
    return sorted((tuple(r) for r in rows), key=lambda t: tuple("" if x is None else str(x) for x in t))


def _raw(spark):
    def df(table, rows):
        return spark.createDataFrame(rows, table_schema(table, with_run_id=True))

    metadata = [
        ("rg", 5, *_place(1)),
        ("rg2", 2, *_place(2)),
        ("ug", 3, *_place(3)),
        ("dead", 1, *_place(4)),
        ("sg", 4, *_place(5)),
        ("dead", None, *_place(50, True)),
    ]
    members = [
        # rg on range: order m-c (i-1), m-b (i-2), then m-0, m-a by member id
        _member("rg", "m-b", 10, ["orders", "audit"], instance="i-2"),
        _member("rg", "m-a", 11, ["orders"], regex="aud.*"),  # audit through the regex record
        _member("rg", "m-c", 12, ["orders"], instance="i-1"),
        _member("rg", "m-0", 13, ["orders"]),
        _member("rg", "gone", 14, ["orders"]),
        ("rg", "gone", *([None] * 9), *_place(15, True)),  # a member deleted by its tombstone
        # rg2 on range, all static: order x2 (i-1), x3 (i-2), x1 (i-3)
        _member("rg2", "x1", 20, ["tiny"], instance="i-3"),
        _member("rg2", "x2", 21, ["tiny"], instance="i-1"),
        _member("rg2", "x3", 22, ["tiny"], instance="i-2"),
        # ug on uniform, homogeneous (orders)
        _member("ug", "u1", 30, ["orders"], assignor="uniform"),
        _member("ug", "u2", 31, ["orders"], assignor="uniform"),
        _member("dead", "d1", 40, ["orders"]),
        # sg on range: one static member, audit P=3 -> s1 0-2 (agrees with the target)
        _member("sg", "s1", 60, ["audit"], instance="i-9"),
    ]
    regexes = [("rg", "aud.*", ["audit"], 1, None, *_place(16))]
    partition_metadata = [("rg2", T, "tiny", 2, *_place(23)), ("rg2", "old", "older", 9, *_place(19))]
    target_meta = [("rg", 5, *_place(17)), ("rg2", 2, *_place(24)), ("ug", 4, *_place(32)), ("sg", 4, *_place(61))]
    target = [
        # rg by hand: orders P=7, M=4: per 1, extra 3 -> m-c 0-1, m-b 2-3, m-0 4-5, m-a 6;
        # audit P=3, M=2 (m-b, m-a): per 1, extra 1 -> m-b 0-1, m-a 2. The server target gives
        # orders 6 to m-0 instead of m-a (one difference), and m-0 a topic id nobody names.
        ("rg", "m-c", _tp({A: [0, 1]}), *_place(18)),
        ("rg", "m-b", _tp({A: [2, 3], B: [0, 1]}), *_place(18)),
        ("rg", "m-0", _tp({A: [4, 5, 6], Z: [0]}), *_place(18)),
        ("rg", "m-a", _tp({B: [2]}), *_place(18)),
        # rg2 by hand: tiny P=2, M=3: per 0, extra 2 -> x2 0, x3 1, x1 nothing: agrees
        ("rg2", "x2", _tp({T: [0]}), *_place(25)),
        ("rg2", "x3", _tp({T: [1]}), *_place(25)),
        ("rg2", "x1", _tp({}), *_place(25)),
        # ug: u1 orders 0-5, u2 orders 5-6 and audit 0 (not subscribed): 5 twice, sizes 6 and 3
        ("ug", "u1", _tp({A: [0, 1, 2, 3, 4, 5]}), *_place(33)),
        ("ug", "u2", _tp({A: [5, 6], B: [0]}), *_place(33)),
        ("dead", "d1", _tp({A: [0]}), *_place(41)),
        ("sg", "s1", _tp({B: [0, 1, 2]}), *_place(62)),
    ]
    current = [
        _current("rg", "m-c", 19, 5, "STABLE", {A: [0]}),  # STABLE, targeted orders 1 not held
        # hand-off: m-b still holds audit 2 pending revocation, m-a waits for it
        _current("rg", "m-b", 19, 5, "UNREVOKED_PARTITIONS", {A: [2, 3], B: [0, 1]}, {B: [2]}),
        _current("rg", "m-a", 19, 5, "UNRELEASED_PARTITIONS", {B: [2]}),
        _current("rg", "m-0", 19, 5, "STABLE", {A: [4, 5, 6], Z: [0]}),
        _current("rg2", "x2", 26, 2, "STABLE", {T: [0]}),
        _current("rg2", "x3", 26, 2, "STABLE", {T: [1]}),
        _current("rg2", "x1", 27, 3, "STABLE", {}),  # holds nothing (as targeted); epoch 3 > assignment epoch 2
        _current("sg", "s1", 63, 4, "STABLE", {}),  # STABLE holding nothing: its 3 targeted partitions not held
        _current("ug", "u1", 34, 4, "STABLE", {A: [0, 1, 2, 3, 4, 5]}),
        _current("ug", "u2", 35, 5, "STABLE", {A: [5, 6]}),  # epoch 5 > assignment epoch 4; orders 5 twice
        _current("dead", "d1", 42, 1, "STABLE", {A: [0, 9]}),
    ]
    registry = [("orders", p, None, [1], 1, 0, [1], A, None, None, "r1") for p in range(7)] + [
        ("audit", p, None, [1], 1, 0, [1], B, None, None, "r1") for p in range(3)
    ]
    return {
        "raw/consumer_group_metadata": df("raw/consumer_group_metadata", metadata),
        "raw/consumer_group_members": df("raw/consumer_group_members", members),
        "raw/consumer_group_regexes": df("raw/consumer_group_regexes", regexes),
        "raw/consumer_group_partition_metadata": df("raw/consumer_group_partition_metadata", partition_metadata),
        "raw/consumer_group_target_metadata": df("raw/consumer_group_target_metadata", target_meta),
        "raw/consumer_group_target_assignments": df("raw/consumer_group_target_assignments", target),
        "raw/consumer_group_current_assignments": df("raw/consumer_group_current_assignments", current),
    }, df("core/topic_partitions", registry)


def test_range_recompute_and_findings(spark):
    raw, registry = _raw(spark)
    st = K.state(raw, registry)
    assert sorted(
        tuple(r) for r in st["groups"].select("group_id", "group_epoch", "assignment_epoch", "assignor").collect()
    ) == [("rg", 5, 5, "range"), ("rg2", 2, 2, "range"), ("sg", 4, 4, "range"), ("ug", 3, 4, "uniform")]

    recomputed = sorted(
        tuple(r) for r in K.range_recompute(st).select("group_id", "topic", "partition", "expected_owner").collect()
    )
    assert recomputed == sorted(
        [("rg", "orders", p, o) for p, o in enumerate(["m-c", "m-c", "m-b", "m-b", "m-0", "m-0", "m-a"])]
        + [("rg", "audit", 0, "m-b"), ("rg", "audit", 1, "m-b"), ("rg", "audit", 2, "m-a")]
        + [("rg2", "tiny", 0, "x2"), ("rg2", "tiny", 1, "x3")]
        + [("sg", "audit", p, "s1") for p in range(3)]
    )

    got = _sorted(K.findings(st).select("group_id", "member_id", "topic", "partition", "finding").collect())
    assert got == _sorted(
        [
            ("rg", "m-0", "orders", 6, "range_target_differs"),  # range gives it to m-a
            ("rg", "m-0", Z, 0, "range_target_differs"),  # a target partition range does not know
            ("rg", None, Z, None, "unresolved_topic_id"),
            ("rg", "m-c", "orders", 1, "stable_member_off_target"),  # targeted, not held
            ("ug", None, "orders", 5, "uniform_partition_targeted_twice"),
            ("ug", "u2", "audit", 0, "uniform_target_not_subscribed"),
            ("ug", "u2", "audit", 0, "stable_member_off_target"),  # targeted, not held
            ("ug", None, None, None, "uniform_unbalanced"),  # sizes 6 and 3
            ("ug", None, None, None, "epoch_order_violated"),  # assignment epoch 4 > group epoch 3
            ("ug", "u2", None, None, "epoch_order_violated"),  # member epoch 5 > assignment epoch 4
            ("ug", None, "orders", 5, "partition_held_twice"),  # u1 and u2, both STABLE
            ("rg2", "x1", None, None, "epoch_order_violated"),  # member epoch 3 > assignment epoch 2, holding nothing
            *[("sg", "s1", "audit", p, "stable_member_off_target") for p in range(3)],  # targeted, not held
        ]
    )
    # the hand-off of audit 2 (m-b pending, m-a UNRELEASED_PARTITIONS) is no finding; the deleted
    # group and the deleted member leave nothing


def test_audit_rows_of_kip848_groups(spark):
    raw, registry = _raw(spark)
    st = K.state(raw, registry)
    rows = (
        audit(K.expected_assignment(st), **K.audit_inputs(st))
        .select("group_id", "topic", "partition", "expected_owner", "observed_owners", "status")
        .collect()
    )
    got = {
        (r["group_id"], r["topic"], r["partition"]): (r["expected_owner"], list(r["observed_owners"]), r["status"])
        for r in rows
    }
    assert got[("rg", "orders", 0)] == ("m-c", ["m-c"], "ok")
    assert got[("rg", "orders", 1)] == ("m-c", [], "unowned")
    assert got[("rg", "audit", 2)] == ("m-a", ["m-a", "m-b"], "duplicate_owner")
    assert got[("rg", Z, 0)] == ("m-0", ["m-0"], "unexpected_partition")  # not in any topic's metadata
    assert got[("ug", "orders", 5)][2] == "duplicate_owner"
    assert got[("ug", "orders", 6)] == ("u2", ["u2"], "ok")
    assert got[("rg2", "tiny", 1)] == ("x3", ["x3"], "ok")  # tiny named by rg2's partition metadata
    assert not [k for k in got if k[0] == "dead"]
    assert [got[("sg", "audit", p)] for p in range(3)] == [("s1", [], "unowned")] * 3
