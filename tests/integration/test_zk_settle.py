"""The settle rule on a real ZooKeeper: a rebalance that does not settle within the stuck limit
is found as ``stuck_rebalance``, a quiet healthy group is not. The history is scripted through
kazoo (testkit.zk_history.Script) and read back from the server's txn logs by
``extract zk-snapshot``; every expected value comes from the script's record (the zxids and
mtimes the server returned) and the rule's durations, never from kaudit.

- ``ok``: c1 joins and claims both partitions, then nothing changes: settled, never stuck.
- ``late``: l1 joins and claims both; l2 joins, l1 releases partition 1 and l2 claims it only
  2.5 s later: the rebalance settled, after more than the 2 s limit: stuck.
- ``stalled``: s1 registers and never writes an owner while the history goes on for more than
  the limit: never settled, stuck."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import time

import pytest
from rich.console import Console

from pipelines.context import RunContext
from pipelines.settle import SettleRule
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_snapshot
from testkit.zk_history import Script, registration
from testkit.zk_server import start_zk

pytestmark = pytest.mark.integration

RUN = "s1"
RULE = SettleRule(window_ms=500, stuck_limit_ms=2000)
LATE_S = 2.5  # how long l2's partition stays unowned: more than the limit


def ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


def play(s: Script) -> dict[str, int]:
    """The history (module docstring); returns the zxid or mtime of the changes the test needs."""
    s.create("broker0", "/brokers/ids/0", json.dumps({"host": "b0", "port": 9092, "version": 4}).encode(),
             ephemeral=True)
    s.create("admin", "/brokers/topics/t", json.dumps({"version": 1, "partitions": {"0": [0], "1": [0]}}).encode())
    for group, consumer in (("ok", "c1"), ("late", "l1")):
        s.create(consumer, f"/consumers/{group}/ids/{consumer}", registration("t"), ephemeral=True)
        for p in (0, 1):
            s.create(consumer, f"/consumers/{group}/owners/t/{p}", f"{consumer}-0".encode(), ephemeral=True)
    time.sleep(1.0)  # both settle: longer than the window
    s.create("s1", "/consumers/stalled/ids/s1", registration("t"), ephemeral=True)
    s.create("l2", "/consumers/late/ids/l2", registration("t"), ephemeral=True)
    s.delete("l1", "/consumers/late/owners/t/1")
    time.sleep(LATE_S)
    s.create("l2", "/consumers/late/owners/t/1", b"l2-0", ephemeral=True)
    time.sleep(1.0)  # late's last state settles: longer than the window
    s.create("admin", "/consumers/ok/offsets/t/0", b"10")  # the history's last change
    by_path = {c.path: c for c in s.changes if c.op == "create"}
    return {
        "stalled_join": by_path["/consumers/stalled/ids/s1"].zxid,
        "stalled_join_ms": by_path["/consumers/stalled/ids/s1"].mtime,
        "late_join": by_path["/consumers/late/ids/l2"].zxid,
        "late_join_ms": by_path["/consumers/late/ids/l2"].mtime,
        "late_claim": s.changes[-2].zxid,
        "late_claim_ms": s.changes[-2].mtime,
        "end_ms": s.changes[-1].mtime,
        "ok_join": by_path["/consumers/ok/ids/c1"].zxid,
        "late_first": by_path["/consumers/late/ids/l1"].zxid,
    }


def read(wh: Warehouse, table: str) -> list[dict]:
    return read_arrow(wh, table, RUN, with_run_id=False).to_pylist()


def test_a_stuck_rebalance_on_a_real_zookeeper_is_found(spark, tmp_path):
    from pipelines.report.facts import gather
    from pipelines.report.page import render
    from pipelines.report.write import write_findings_csv
    from pipelines.spark.build import build_core
    from pipelines.transform.dbt_runner import run_dbt

    server = start_zk(tmp_path / "zk")
    script = Script(server.hosts)
    try:
        got = play(script)
        wh = Warehouse(tmp_path / "warehouse")
        extract_snapshot(RunContext(wh, RUN, console=Console(file=io.StringIO())), path=server.data_dir)
    finally:
        script.stop()
        server.stop()
    # what the script did, against the rule's durations
    assert got["late_claim_ms"] - got["late_join_ms"] > RULE.stuck_limit_ms
    assert got["end_ms"] - got["stalled_join_ms"] > RULE.stuck_limit_ms
    assert got["end_ms"] - got["late_claim_ms"] >= RULE.window_ms

    build_core(RunContext(wh, RUN, quiet=True), {}, RULE)
    states = {(r["group_id"], r["state_zxid"]): r for r in read(wh, "core/rebalance_states")}
    assert set(states) == {("ok", got["ok_join"]), ("late", got["late_first"]), ("late", got["late_join"]),
                           ("stalled", got["stalled_join"])}
    first = states[("late", got["late_first"])]
    assert (first["settled"], first["stuck"]) == (True, False)
    ok = states[("ok", got["ok_join"])]
    assert (ok["settled"], ok["stuck"]) == (True, False)
    late = states[("late", got["late_join"])]
    assert (late["settled"], late["settled_zxid"], late["settled_at"]) == (
        True, got["late_claim"], ts(got["late_claim_ms"]))
    assert (late["rebalance_started_at"], late["stuck"]) == (ts(got["late_join_ms"]), True)
    stalled = states[("stalled", got["stalled_join"])]
    assert (stalled["settled"], stalled["stuck"], stalled["unowned_at_end"]) == (False, True, 2)
    assert {r["stuck_limit_ms"] for r in states.values()} == {RULE.stuck_limit_ms}
    assert sorted(g for (g, _), r in states.items() if r["stuck"]) == ["late", "stalled"]
    # the unowned partitions of the stalled group are no past fault: it never settled
    assert not [r for r in read(wh, "core/settled_audit") if r["group_id"] == "stalled" and r["settled"]]

    run_dbt(RunContext(wh, RUN, quiet=True), select=["+rebalances"], unit_tests=True)  # the mart's unit tests too
    marts = read(wh, "marts/rebalances")
    assert sorted(r["group_id"] for r in marts if r["is_stuck"]) == ["late", "stalled"]
    (late_row,) = [r for r in marts if r["group_id"] == "late" and r["is_stuck"]]
    assert late_row["rebalance_ms"] == got["late_claim_ms"] - got["late_join_ms"]

    facts = gather(wh, RUN)
    assert sorted(s["group_id"] for s in facts.rebalances.stuck) == ["late", "stalled"]
    assert facts.rebalances.past_wrong == []
    html = render(facts)
    assert html.count('class="stuck-rebalance"') == 2
    path = tmp_path / "findings.csv"
    write_findings_csv([], path, rebalances=facts.rebalances)
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "stuck_rebalance"]
    assert sorted(r["group_id"] for r in rows) == ["late", "stalled"]
    (stalled_csv,) = [r for r in rows if r["group_id"] == "stalled"]
    assert "not settled" in stalled_csv["detail"]
