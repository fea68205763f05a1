"""The settle rule on small histories (pipelines.settle, pipelines.spark.rebalances /
settling): a state is settled when it ends with every expected partition owned and nothing
changes those owners for the settle window; a state that never settled is a transition (its
audit rows are no finding); a rebalance that does not settle within the stuck limit is stuck.
Every expected value is worked out by hand from the changes the test writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from pipelines.errors import UsageError
from pipelines.settle import DEFAULT_SETTLE_WINDOW_MS, SettleRule, parse
from pipelines.spark.rebalances import settled_states
from pipelines.spark.schemas import table_schema

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NAIVE = T0.replace(tzinfo=None)  # collect() gives UTC wall times
TOPIC = json.dumps({"version": 1, "partitions": {"0": [1], "1": [1]}}).encode()


def reg(topic: str = "t") -> bytes:
    return json.dumps({"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "0"}).encode()


class History:
    """raw/znode_changes rows of group g on topic t (2 partitions), one txn per change."""

    def __init__(self, zxid: int = 0):
        self.rows, self.zxid = [], zxid

    def change(self, ms: int, op: str, path: str, value: bytes | None = None) -> int:
        self.zxid += 1
        kind = ("broker_topics" if path.startswith("/brokers/topics/") else "broker_ids" if path.startswith("/brokers")
                else "consumer_" + path.split("/")[3])
        self.rows.append((self.zxid, 0, T0 + timedelta(milliseconds=ms), 7, op, kind, path, value,
                          None if op == "delete" else 0, None, "r1"))
        return self.zxid

    def frame(self, spark):
        return spark.createDataFrame(self.rows, table_schema("raw/znode_changes", with_run_id=True))


def build(spark, h: History, rule: SettleRule):
    states, audit, _ = settled_states(h.frame(spark), {}, h.zxid, rule)
    return ({r["state_zxid"]: r for r in states.collect()},
            sorted((r["state_zxid"], r["partition"], r["status"], r["settled"]) for r in audit.collect()))


def test_the_default_window_is_the_seed_consumers_retries():
    assert DEFAULT_SETTLE_WINDOW_MS == 2000 * 4
    assert parse(None, None) == SettleRule()
    assert parse("0", "10") == SettleRule(0, 10)
    for bad in (("x", None), ("-1", None), (None, "1.5"), ("9000", "8000")):
        with pytest.raises(UsageError):
            parse(*bad)


def test_a_burst_of_joins_is_one_rebalance_of_transitions(spark):
    """c1 joins at 0 ms and claims both partitions at 1 ms; c2 joins at 2 ms, c1 releases 1 at
    3 ms, c2 claims it at 4 ms and nothing changes until c3 joins 20 s later, the history's last
    change (range over c1, c2, c3 and 2 partitions: c1 0, c2 1, c3 nothing)."""
    h = History()
    h.change(0, "create", "/brokers/topics/t", TOPIC)
    s1 = h.change(0, "create", "/consumers/g/ids/c1", reg())
    h.change(1, "create", "/consumers/g/owners/t/0", b"c1-0")
    h.change(1, "create", "/consumers/g/owners/t/1", b"c1-0")
    s2 = h.change(2, "create", "/consumers/g/ids/c2", reg())  # 1 ms after c1's owners: a transition
    h.change(3, "delete", "/consumers/g/owners/t/1")
    last = h.change(4, "create", "/consumers/g/owners/t/1", b"c2-0")
    s3 = h.change(20_004, "create", "/consumers/g/ids/c3", reg())
    states, audit = build(spark, h, SettleRule(8000, 60_000))
    # state 1 ended 1 ms after its owners: a transition, though its owners were right
    assert (states[s1]["settled"], states[s1]["settled_zxid"]) == (False, None)
    # state 2 ended with c1 0, c2 1 (range's), unchanged for 20 s: settled at its last owner write
    assert (states[s2]["settled"], states[s2]["settled_zxid"], states[s2]["settled_at"]) == (
        True, last, NAIVE + timedelta(milliseconds=4))
    # both are one rebalance, begun at c1's join, which settled 4 ms later: not stuck
    assert states[s2]["rebalance_started_at"] == NAIVE
    assert [states[s]["stuck"] for s in (s1, s2)] == [False, False]
    # state 3 (c3 joined, owns nothing, range gives it nothing of 2 partitions... c1 0, c2 1):
    # nothing changes after it, but the history ends at its own trigger: not settled yet
    assert states[s3]["settled"] is False and states[s3]["next_zxid"] is None
    assert states[s3]["settle_window_ms"] == 8000 and states[s3]["stuck_limit_ms"] == 60_000
    # the audit rows carry their state's flag: state 1 ended with its expected owners (c1 alone)
    assert (s1, 1, "ok", False) in audit and (s2, 1, "ok", True) in audit


def test_a_quiet_state_with_an_unowned_partition_is_a_stuck_rebalance(spark):
    """c1 owns both; c2 joins at 10 s, c1 releases 1 at 10.001 s, nobody claims it; at 90 s c2
    leaves and c1 takes 1 back at 90.002 s. The state of c2's join never settled (partition 1 had
    no owner): the rebalance lasted 80.002 s > the 60 s limit: stuck; c2's leave settled it."""
    h = History()
    h.change(0, "create", "/brokers/topics/t", TOPIC)
    h.change(0, "create", "/consumers/g/ids/c1", reg())
    h.change(1, "create", "/consumers/g/owners/t/0", b"c1-0")
    h.change(1, "create", "/consumers/g/owners/t/1", b"c1-0")
    s2 = h.change(10_000, "create", "/consumers/g/ids/c2", reg())
    h.change(10_001, "delete", "/consumers/g/owners/t/1")
    s3 = h.change(90_000, "delete", "/consumers/g/ids/c2")
    h.change(90_002, "create", "/consumers/g/owners/t/1", b"c1-0")
    h.change(100_000, "set", "/consumers/g/offsets/t/0", b"5")  # the history goes on 10 s more
    states, audit = build(spark, h, SettleRule(8000, 60_000))
    assert states[s2]["settled"] is False and states[s2]["unowned_partitions"] == 1
    # the rebalance of c2's join lasted until c2's leave settled at 90.002 s
    assert (states[s3]["settled"], states[s3]["settled_at"]) == (True, NAIVE + timedelta(milliseconds=90_002))
    assert states[s3]["rebalance_started_at"] == NAIVE + timedelta(seconds=10)
    assert (states[s2]["stuck"], states[s3]["stuck"]) == (False, True)
    # with a 100 s limit it is not stuck
    states, _ = build(spark, h, SettleRule(8000, 100_000))
    assert not any(s["stuck"] for s in states.values())
    # the unowned partition of the unsettled state is no settled finding
    assert (s2, 1, "unowned", False) in audit


def test_a_wrong_owner_held_past_the_window_is_a_settled_fault(spark):
    """c1 and c2 each claim the other's range share and keep it 30 s (> 8 s): settled, wrong."""
    h = History()
    h.change(0, "create", "/brokers/topics/t", TOPIC)
    h.change(0, "create", "/consumers/g/ids/c1", reg())
    s2 = h.change(5, "create", "/consumers/g/ids/c2", reg())
    h.change(6, "create", "/consumers/g/owners/t/0", b"c2-0")
    h.change(7, "create", "/consumers/g/owners/t/1", b"c1-0")
    h.change(30_007, "delete", "/consumers/g/ids/c2")
    states, audit = build(spark, h, SettleRule(8000, 60_000))
    assert (states[s2]["settled"], states[s2]["wrong_owner_partitions"]) == (True, 2)
    assert (s2, 0, "wrong_owner", True) in audit and (s2, 1, "wrong_owner", True) in audit
    # a window longer than the 30 s it lasted makes it a transition
    states, audit = build(spark, h, SettleRule(40_000, 60_000))
    assert states[s2]["settled"] is False and (s2, 0, "wrong_owner", False) in audit


def test_a_history_ending_at_the_greatest_zxid_has_a_last_state(spark):
    """The contract allows any bigint zxid: a history whose last change has zxid 2^63-1 still
    closes its last state (at that zxid) instead of overflowing past it."""
    h = History(zxid=(1 << 63) - 5)
    h.change(0, "create", "/brokers/topics/t", TOPIC)
    s1 = h.change(0, "create", "/consumers/g/ids/c1", reg())
    h.change(1, "create", "/consumers/g/owners/t/0", b"c1-0")
    h.change(1, "create", "/consumers/g/owners/t/1", b"c1-0")
    assert h.zxid == (1 << 63) - 1
    states, audit = build(spark, h, SettleRule(0, 60_000))
    assert list(states) == [s1]
    assert [(p, status) for _, p, status, _ in audit] == [(0, "ok"), (1, "ok")]
