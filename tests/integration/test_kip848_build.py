"""A KIP-848 group on a KRaft cluster through the real CLI (``extract kraft``, ``extract
offsets``) and ``build`` (real local Spark): topic ids named by the KRaft registry, the audit
rows (``source = 'kafka'``) and the findings of a group whose target and current assignment
disagree. Records made by the independent encoders (testkit.kraft, testkit.kip848)."""

from __future__ import annotations

import pytest

from pipelines.cli import main
from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit import kip848 as G
from testkit import kraft as B
from testkit.segments import (
    batch,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

pytestmark = pytest.mark.integration

T0 = 1_750_000_000_000
ORDERS = B.topic_uuid(1)


def _kaudit(*args: str) -> int:
    with pytest.raises(SystemExit) as ex:
        main(list(args))
    return ex.value.code


def test_a_kip848_group_audited_against_the_kraft_registry(spark, tmp_path):
    meta = tmp_path / "kraft" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    log = B.Log(start_offset=0)
    log.append(
        B.register_broker(1, fenced=False),
        B.topic("orders", ORDERS),
        B.partition(ORDERS, 0, [1]),
        B.partition(ORDERS, 1, [1]),
    )
    log.write(meta / B.segment_name(0))

    # range group: m1 (instance "a") first, then m2 -> range gives orders 0 to m1, 1 to m2; the
    # server's target gives both to m1; m1 holds 0, m2 holds 1, both STABLE
    records = [
        G.group_metadata("g", 3),
        G.member_metadata("g", "m2", topics=["orders"], assignor="range"),
        G.member_metadata("g", "m1", instance_id="a", topics=["orders"], assignor="range"),
        G.target_metadata("g", 3),
        G.target_member("g", "m1", {ORDERS: [0, 1]}),
        G.target_member("g", "m2", {}),
        G.current_member("g", "m1", epoch=3, previous_epoch=2, assigned={ORDERS: [0]}),
        G.current_member("g", "m2", epoch=3, previous_epoch=2, assigned={ORDERS: [1]}),
        (offset_commit_key("g", "orders", 0), offset_commit_value(5, commit_ts=T0, version=4, tags={0: ORDERS.bytes})),
    ]
    write_segment(
        tmp_path / "logs" / "__consumer_offsets-0" / segment_name(0), [batch(records, base_offset=0, timestamp_ms=T0)]
    )

    wh = Warehouse(tmp_path / "wh")
    assert _kaudit("--warehouse", str(wh.root), "--run-id", "k", "extract", "kraft", str(meta)) == 0
    assert _kaudit("--warehouse", str(wh.root), "--run-id", "k", "extract", "offsets", str(tmp_path / "logs")) == 0
    assert read_arrow(wh, "raw/offset_commits", "k").column("topic_id").to_pylist() == [B.uuid_text(ORDERS)]
    build_core(RunContext(wh, "k", quiet=True), {})

    audit = {
        (r["topic"], r["partition"]): (r["expected_owner"], r["observed_owners"], r["status"])
        for r in read_arrow(wh, "core/assignment_audit", "k").to_pylist()
        if r["group_id"] == "g"
    }
    assert audit == {("orders", 0): ("m1", ["m1"], "ok"), ("orders", 1): ("m1", ["m2"], "wrong_owner")}
    findings = sorted(
        (r["finding"], r["member_id"], r["topic"], r["partition"])
        for r in read_arrow(wh, "core/consumer_group_findings", "k").to_pylist()
    )
    assert findings == [
        ("range_target_differs", "m1", "orders", 1),
        ("stable_member_off_target", "m1", "orders", 1),  # targeted, not held
        ("stable_member_off_target", "m2", "orders", 1),  # held, not targeted
    ]


def test_members_that_leave_cleanly_are_no_finding(spark, tmp_path):
    """Group g (uniform) over orders (3 partitions): m1, m2, m3 targeted 0, 1, 2 and holding
    them at epoch 1. m2 leaves cleanly (its current assignment, target and member tombstoned,
    then epoch 2, one batch), then m3 the same way (epoch 3); the target of epoch 3 gives m1
    0-2, which m1 then holds. Nobody that left is an expected owner: no settled state has a row
    but ok, epoch 1 is seen before the leaves (all ok), epoch 2 (never targeted) is a transition,
    and nothing is stuck."""
    meta = tmp_path / "kraft" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    log = B.Log(start_offset=0)
    log.append(B.register_broker(1, fenced=False), B.topic("orders", ORDERS),
               *[B.partition(ORDERS, p, [1]) for p in range(3)])
    log.write(meta / B.segment_name(0))

    members = ("m1", "m2", "m3")
    joined = [G.group_metadata("g", 1),
              *[G.member_metadata("g", m, topics=["orders"], assignor=None) for m in members],
              *[G.target_member("g", m, {ORDERS: [p]}) for p, m in enumerate(members)],
              G.target_metadata("g", 1)]
    held = [G.current_member("g", m, epoch=1, previous_epoch=0, assigned={ORDERS: [p]}) for p, m in enumerate(members)]

    def leave(m: str, epoch: int) -> list:
        return [G.current_member("g", m, tombstone=True), G.target_member("g", m, None),
                G.member_metadata("g", m, tombstone=True), G.group_metadata("g", epoch)]

    batches, offset = [], 0
    for records, at in ((joined, T0), (held, T0 + 1000), (leave("m2", 2), T0 + 60_000), (leave("m3", 3), T0 + 60_000),
                        ([G.target_member("g", "m1", {ORDERS: [0, 1, 2]}), G.target_metadata("g", 3)], T0 + 61_000),
                        ([G.current_member("g", "m1", epoch=3, previous_epoch=1, assigned={ORDERS: [0, 1, 2]})],
                         T0 + 62_000)):
        batches.append(batch(records, base_offset=offset, timestamp_ms=at))
        offset += len(records)
    write_segment(tmp_path / "logs" / "__consumer_offsets-0" / segment_name(0), batches)

    wh = Warehouse(tmp_path / "wh")
    assert _kaudit("--warehouse", str(wh.root), "--run-id", "k", "extract", "kraft", str(meta)) == 0
    assert _kaudit("--warehouse", str(wh.root), "--run-id", "k", "extract", "offsets", str(tmp_path / "logs")) == 0
    build_core(RunContext(wh, "k", quiet=True), {})

    states = sorted(read_arrow(wh, "core/rebalance_states", "k").to_pylist(), key=lambda r: r["generation"])
    assert [(r["generation"], r["settled"], r["stuck"]) for r in states] == [
        (1, True, False), (2, False, False), (3, True, False)]
    audit = read_arrow(wh, "core/settled_audit", "k").to_pylist()
    assert [r for r in audit if r["settled"] and r["status"] != "ok"] == []
    assert sorted((r["generation"], r["partition"], r["expected_owner"], r["observed_owner"]) for r in audit
                  if r["settled"]) == [(1, 0, "m1", "m1"), (1, 1, "m2", "m2"), (1, 2, "m3", "m3"),
                                       (3, 0, "m1", "m1"), (3, 1, "m1", "m1"), (3, 2, "m1", "m1")]
    # nobody names a member after its tombstones as expected owner
    assert not [r for r in audit if r["generation"] > 1 and r["expected_owner"] in ("m2", "m3")]
