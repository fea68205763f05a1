"""A KIP-848 group on a KRaft cluster through the real CLI (``extract kraft``, ``extract
offsets``) and ``build`` (real local Spark): topic ids named by the KRaft registry, the audit
rows (``source = 'kafka'``) and the findings of a group whose target and current assignment
disagree. Records made by the independent encoders (testkit.kraft, testkit.kip848)."""

from __future__ import annotations

import pytest

from pipelines.cli import main
from pipelines.context import RunContext
from pipelines.reading import read_arrow
from pipelines.spark.build import build_core
from pipelines.warehouse import Warehouse
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
