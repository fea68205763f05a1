"""Issue 21, Kafka era: a scripted history of a classic group (generations written by the
leader, one of them wrong) and a KIP-848 group (two epochs, the second never settled), encoded
as ``__consumer_offsets`` segments by the independent encoders (kafka-python builders in
testkit.segments, testkit.kip848), through the real ``extract offsets``, ``build`` (local Spark)
and ``dbt build`` of ``marts/rebalances``. Every expected value comes from the script."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from pipelines.cli import main
from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse
from testkit import kip848 as K
from testkit.segments import (
    assignment,
    batch,
    group_metadata_key,
    group_metadata_value,
    segment_name,
    subscription,
    write_segment,
)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RUN = "kg"
T0 = 1_750_000_000_000
MINUTE = 60_000
PARTITIONS = 4
ORDERS = uuid.UUID(int=7)
KIP848_MINUTE = 40  # the KIP-848 group's batches: one a minute from here

# classic group g on range over t: (minute, generation, {member: partitions the leader wrote})
CLASSIC = [
    (0, 1, {"a": [0, 1, 2, 3]}),
    (10, 2, {"a": [0, 1, 2], "b": [3]}),  # wrong: range gives b 2-3
    (20, 3, {"a": [0, 1], "b": [2, 3]}),
    (25, 4, {"a": [0, 1], "b": [2], "c": [3]}),
    (30, 5, {"a": [0, 1], "c": [2, 3]}),
]


def range_owners(members: list[str]) -> dict[int, str]:
    per, extra = divmod(PARTITIONS, len(members))
    out, p = {}, 0
    for i, m in enumerate(sorted(members)):
        for _ in range(per + (i < extra)):
            out[p] = m
            p += 1
    return out


def trigger(before: set[str] | None, now: set[str]) -> str:
    if before is None:
        return "first"
    joined, left = now - before, before - now
    return ("members_replaced" if joined and left else "member_joined" if joined else "member_left" if left
            else "same_members")


def _kaudit(*args: str) -> None:
    with pytest.raises(SystemExit) as ex:
        main(list(args))
    assert ex.value.code == 0


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-generations")
    batches, offset = [], 0
    for minute, gen, owners in CLASSIC:
        members = [dict(member_id=m, client_id="c", client_host="/h", subscription=subscription(["t"]),
                        assignment=assignment({"t": ps})) for m, ps in owners.items()]
        value = group_metadata_value(generation=gen, protocol="range", leader=min(owners),
                                     state_ts=T0 + minute * MINUTE, members=members)
        batches.append(batch([(group_metadata_key("g"), value)], base_offset=offset,
                             timestamp_ms=T0 + minute * MINUTE))
        offset += 1
    # KIP-848 group k: epoch 1 (m1 targeted 0-1, stable), epoch 2 (m2 joined: m1 0, m2 1; m1
    # stable, m2 never gets partition 1)
    kip = [
        [K.partition_metadata("k", [(ORDERS, "orders", 2)]),
         K.member_metadata("k", "m1", topics=["orders"], assignor="uniform"), K.group_metadata("k", 1)],
        [K.target_member("k", "m1", {ORDERS: [0, 1]}), K.target_metadata("k", 1)],
        [K.current_member("k", "m1", epoch=1, assigned={ORDERS: [0, 1]})],
        [K.member_metadata("k", "m2", topics=["orders"], assignor="uniform"), K.group_metadata("k", 2)],
        [K.target_member("k", "m1", {ORDERS: [0]}), K.target_member("k", "m2", {ORDERS: [1]}),
         K.target_metadata("k", 2)],
        [K.current_member("k", "m1", epoch=2, previous_epoch=1, assigned={ORDERS: [0]})],
        [K.current_member("k", "m2", epoch=2, previous_epoch=0, state="UNRELEASED_PARTITIONS")],
    ]
    places = {}  # record key -> [(log offset, its batch's time)]
    for n, records in enumerate(kip):
        written_at = T0 + (KIP848_MINUTE + n) * MINUTE
        for i, (k, _) in enumerate(records):
            places[k] = places.get(k, []) + [(offset + i, written_at)]
        batches.append(batch(records, base_offset=offset, timestamp_ms=written_at))
        offset += len(records)
    write_segment(root / "logs" / "__consumer_offsets-0" / segment_name(0), batches)

    wh = Warehouse(root / "wh")
    _kaudit("--warehouse", str(wh.root), "--run-id", RUN, "extract", "offsets", str(root / "logs"))
    wh.write_table("raw/log_end_offsets", RUN, pa.Table.from_pylist(
        [{"topic": "t", "partition": p, "log_start_offset": 0, "log_end_offset": 9} for p in range(PARTITIONS)],
        SCHEMAS["raw/log_end_offsets"]))
    build_core(RunContext(wh, RUN, quiet=True), {})
    return wh, places


def test_every_generation_and_epoch_is_a_state_audited(built):
    wh, places = built
    states = read_arrow(wh, "core/rebalance_states", RUN).to_pylist()
    audit = read_arrow(wh, "core/settled_audit", RUN).to_pylist()

    # classic: one state per generation, the leader's assignment against range; each settled
    # (nothing follows a generation for the 8 s settle window: they are minutes apart, and the
    # run's KIP-848 records go on 10 minutes after the last one)
    want, before = [], None
    for lo, (_, gen, owners) in enumerate(CLASSIC):
        expected = range_owners(list(owners))
        written = {p: m for m, ps in owners.items() for p in ps}
        wrong = sorted(p for p in expected if written.get(p) != expected[p])
        want.append((gen, lo, trigger(before, set(owners)), True, len(wrong)))
        before = set(owners)
    got = sorted((r["generation"], r["log_offset"], r["trigger"], r["settled"], r["wrong_owner_partitions"])
                 for r in states if r["group_protocol"] == "classic")
    assert got == want
    bad = {(r["generation"], r["partition"], r["expected_owner"], r["observed_owner"], r["settled"])
           for r in audit if r["group_protocol"] == "classic" and r["status"] != "ok"}
    assert bad == {(2, 2, "b", "a", True)}  # the old generation's wrong owner, though today's is right

    # KIP-848: epoch 1 settled when m1 held its target; epoch 2 never (m2 never holds partition 1)
    # the records carry no time: a state's times are its records' batch times
    epoch = places[K.group_metadata("k", 1)[0]]
    m1_stable = places[K.current_member("k", "m1")[0]]
    got = sorted((r["generation"], r["log_offset"], r["trigger"], r["settled"], r["settled_log_offset"],
                  r["unowned_at_end"], r["started_at"], r["settled_at"], r["next_at"])
                 for r in states if r["group_protocol"] == "consumer")
    assert got == [(1, epoch[0][0], "first", True, m1_stable[0][0], 0, at(epoch[0][1]), at(m1_stable[0][1]),
                    at(epoch[1][1])),
                   (2, epoch[1][0], "member_joined", False, None, 1, at(epoch[1][1]), None, None)]
    held = {(r["generation"], r["held_from"], r["held_until"]) for r in audit if r["group_protocol"] == "consumer"}
    assert held == {(1, at(epoch[0][1]), at(epoch[1][1])), (2, at(epoch[1][1]), None)}
    bad = {(r["generation"], r["topic"], r["partition"], r["expected_owner"], r["status"])
           for r in audit if r["group_protocol"] == "consumer" and r["status"] != "ok"}
    assert bad == {(2, "orders", 1, "m2", "unowned")}


def test_rebalances_mart_flags_the_storm(built):
    from pipelines.transform.dbt_runner import run_dbt

    wh, _ = built
    run_dbt(RunContext(wh, RUN, quiet=True), select=["+rebalances"])
    rate = yaml.safe_load((REPO / "dbt_project.yml").read_text())["vars"]["rebalance_storm_per_hour"]
    rows = read_arrow(wh, "marts/rebalances", RUN).to_pylist()
    minutes = [m for m, _, _ in CLASSIC]
    want = [(gen, sum(m - 60 < other <= m for other in minutes) > rate) for m, gen, _ in CLASSIC]
    assert sorted((r["generation"], r["is_storm"]) for r in rows if r["group_protocol"] == "classic") == want
    ts = {r["generation"]: r["started_at"] for r in rows if r["group_protocol"] == "classic"}
    assert ts[1] == dt.datetime.fromtimestamp(T0 / 1000, dt.UTC)
    # KIP-848 epochs at their records' batch times: 2 in an hour, no storm; epoch 1 lasted until it
    # settled (m1 stable, 2 batches after its group metadata), epoch 2 has no end
    kip = sorted((r for r in rows if r["group_protocol"] == "consumer"), key=lambda r: r["generation"])
    assert [(r["generation"], r["rebalances_last_hour"], r["is_storm"], r["duration_ms"]) for r in kip] == [
        (1, 1, False, 2 * MINUTE), (2, 2, False, None)]


def test_ownership_history_has_each_generation_and_each_epoch(built):
    """Classic: each member's assignment per generation, until the next; KIP-848: what each
    member held at the end of each epoch (the script's current assignments), from the epoch's
    record's batch time until the next epoch's."""
    from pipelines.transform.dbt_runner import run_dbt

    wh, places = built
    run_dbt(RunContext(wh, RUN, quiet=True), select=["+ownership_history"])
    rows = read_arrow(wh, "marts/ownership_history", RUN).to_pylist()
    starts = [T0 + minute * MINUTE for minute, _, _ in CLASSIC]
    classic = sorted((gen, ("t", p, m), at(starts[i]), at(starts[i + 1]) if i + 1 < len(CLASSIC) else None)
                     for i, (_, gen, owners) in enumerate(CLASSIC) for m, ps in owners.items() for p in ps)
    got = sorted((r["generation"], (r["topic"], r["partition"], r["owner"]), r["owned_from"], r["owned_until"])
                 for r in rows if r["group_id"] == "g")
    assert got == classic
    (_, e1), (_, e2) = places[K.group_metadata("k", 1)[0]]  # both epochs' records (one key: the group)
    assert sorted((r["generation"], r["topic"], r["partition"], r["owner"], r["owned_from"], r["owned_until"])
                  for r in rows if r["group_id"] == "k") == [
        (1, "orders", 0, "m1", at(e1), at(e2)), (1, "orders", 1, "m1", at(e1), at(e2)),
        (2, "orders", 0, "m1", at(e2), None),  # m2 was never given partition 1
    ]
    assert {r["source"] for r in rows} == {"kafka"}


def at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
