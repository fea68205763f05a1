"""The ZooKeeper history on a real ZooKeeper: a scripted coordination history (testkit.zk_history: consumers
joining and leaving, owners moved in the right and a wrong order, offsets written and one going
back, a broker removed) is read back from the server's own txn logs by ``extract zk-snapshot``
into ``raw/znode_changes``, and the ZooKeeper offset writes become commits of
``commit_frequency``, ``offset_regressions``, ``consumer_lag_status`` and the drift time series.
Every expected value comes from the script's record (the zxids and mtimes the server returned),
never from kaudit."""

from __future__ import annotations

import datetime as dt
import io
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pytest
import yaml
from rich.console import Console

from pipelines.context import RunContext
from pipelines.settle import SettleRule
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_snapshot
from testkit.zk_history import Script, play
from testkit.zk_server import start_zk

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

UTC = dt.UTC
RUN = "h1"
# the script's changes come milliseconds apart: with the default settle window every state but
# the last would be a transition; a window of 0 settles every state that ends with its
# partitions owned (the settle window itself: tests/unit/spark/test_spark_settle.py, test_zk_settle.py)
WINDOW_0 = SettleRule(window_ms=0)
KINDS = {"ids": "consumer_ids", "owners": "consumer_owners", "offsets": "consumer_offsets"}


def kind_of(path: str) -> str:
    parts = path.split("/")
    if parts[1] == "brokers":
        return "broker_ids" if parts[2] == "ids" else "broker_topics"
    return KINDS[parts[3]]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """(script, warehouse root, extract meta): the history played, its data dir extracted while
    the server still runs (so the consumers still live at the end, as in a capture)."""
    root = tmp_path_factory.mktemp("zk-history")
    server = start_zk(root / "zk")
    script = Script(server.hosts)
    try:
        play(script)
        wh = Warehouse(root / "warehouse")
        meta = extract_snapshot(RunContext(wh, RUN, console=Console(file=io.StringIO())), path=server.data_dir)
    finally:
        script.stop()
        server.stop()
    return script, wh, meta


def read(wh: Warehouse, table: str) -> list[dict]:
    return read_arrow(wh, table, RUN, with_run_id=False).to_pylist()


def test_every_change_is_a_row(history):
    script, wh, meta = history
    rows = [r for r in read(wh, "raw/znode_changes") if r["op"] != "snapshot"]
    assert meta["znode_changes"] == len(read(wh, "raw/znode_changes"))
    got = Counter((r["op"], r["kind"], r["path"], r["value"], r["session"]) for r in rows)
    want = Counter((c.op, kind_of(c.path), c.path, c.value, c.session) for c in script.changes)
    assert got == want
    # the zxid and time the server returned for each change the script made itself
    by_key = {(r["op"], r["path"], r["zxid"]): r for r in rows}
    assert set(by_key) == {(c.op, c.path, c.zxid) for c in script.changes}
    for c in script.changes:
        if c.mtime is not None:
            assert by_key[(c.op, c.path, c.zxid)]["time"] == dt.datetime.fromtimestamp(c.mtime / 1000, UTC)
    # the deletes of one closed session are one txn, numbered 0.. by seq
    for _, session in script.closed:
        zxids = {c.zxid for c in script.changes if c.session == session and c.op == "delete"}
        txn = [r for r in rows if r["zxid"] in zxids and r["session"] == session]
        assert sorted(r["seq"] for r in txn) == list(range(len(txn)))
    # replay order is zxid order
    zxids = [(r["zxid"], r["seq"]) for r in rows]
    assert zxids == sorted(zxids)


def test_snapshot_rows_are_the_nodes_before_the_logs(history):
    _, wh, _ = history
    # a fresh server's first snapshot is empty: the history starts from nothing
    assert [r for r in read(wh, "raw/znode_changes") if r["op"] == "snapshot"] == []


def zk_commits(script: Script) -> dict[int, list]:
    """partition -> [(zxid, mtime ms, offset)] of the script's offset writes, in order."""
    out = defaultdict(list)
    for c in script.changes:
        if "/offsets/" in c.path and c.op in ("create", "set"):
            out[int(c.path.rsplit("/", 1)[1])].append((c.zxid, c.mtime, int(c.value)))
    return out


def ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, UTC)


def test_zookeeper_commits_in_the_offset_marts(history, spark, tmp_path):
    from pipelines.transform.dbt_runner import run_dbt

    script, wh, _ = history
    commits = zk_commits(script)
    # the log ends, and a dual-committing Kafka side for partition 0 (the test writes both)
    end = 50
    last_ms = max(m for rows in commits.values() for _, m, _ in rows)
    wh.write_table("raw/log_end_offsets", RUN, pa.Table.from_pylist(
        [{"topic": "t", "partition": p, "log_start_offset": 0, "log_end_offset": end,
          "max_timestamp": ts(last_ms + 3_600_000)} for p in range(4)], SCHEMAS["raw/log_end_offsets"]))
    first_ms = min(m for rows in commits.values() for _, m, _ in rows)
    kafka = [(first_ms + 1, 15, 1000), (last_ms + 1, 27, 1001)]  # (ms, offset, log offset)
    wh.write_table("raw/offset_commits", RUN, pa.Table.from_pylist([
        {"group_id": "g", "topic": "t", "partition": 0, "committed_offset": o, "commit_timestamp": ts(ms),
         "is_tombstone": False, "key_version": 1, "value_version": 3, "offsets_partition": 3, "log_offset": lo,
         "producer_id": -1, "is_transactional": False, "metadata": ""} for ms, o, lo in kafka],
        SCHEMAS["raw/offset_commits"]))
    run_dbt(RunContext(wh, RUN, quiet=True), select=[
        "+commit_frequency", "+offset_regressions", "+consumer_lag_status", "+offset_drift_history"])

    def mart(name):
        return read(wh, f"marts/{name}")

    # commit_frequency: ZooKeeper writes per partition and hour
    want = Counter()
    for p, rows in commits.items():
        for _, ms, _ in rows:
            want[(p, ts(ms).replace(minute=0, second=0, microsecond=0))] += 1
    got = {(r["partition"], r["window_start"]): r["commits"] for r in mart("commit_frequency")
           if r["source"] == "zookeeper"}
    assert got == dict(want)
    assert {r["source"] for r in mart("commit_frequency")} == {"zookeeper", "kafka"}

    # offset_regressions: each write below the one before on its partition
    want_reg = []
    for p, rows in commits.items():
        for (_, _, before), (zxid, ms, offset) in zip(rows, rows[1:], strict=False):
            if offset < before:
                want_reg.append((p, zxid, before, offset, before - offset, ts(ms)))
    got_reg = [(r["partition"], r["zxid"], r["previous_committed_offset"], r["committed_offset"], r["regressed_by"],
                r["committed_at"]) for r in mart("offset_regressions") if r["source"] == "zookeeper"]
    assert want_reg and sorted(got_reg) == sorted(want_reg)

    # Burrow: a ZooKeeper partition gets a status like a Kafka one. The clock is the newest
    # log-end timestamp, an hour after the last write; no lag ever reached 0, so each window's
    # rule is STOP (a window of one commit spans 0 ms: any time after it is longer).
    status = {r["partition"]: r for r in mart("consumer_lag_status") if r["source"] == "zookeeper"}
    assert set(status) == set(commits)
    for p, rows in commits.items():
        r = status[p]
        assert (r["window_commits"], r["first_offset"], r["last_offset"]) == (len(rows), rows[0][2], rows[-1][2])
        assert r["current_lag"] == end - rows[-1][2]
        assert r["status"] == "STOP" and r["group_status"] == "STOP"

    # drift: after every commit of either store, both stores' offsets then
    events = ([(ts(ms), "zookeeper", zxid, o) for zxid, ms, o in commits[0]]
              + [(ts(ms), "kafka", lo, o) for ms, o, lo in kafka])
    held, want_drift = {"zookeeper": None, "kafka": None}, []
    for at, store, _, offset in sorted(events):
        held[store] = offset
        z, k = held["zookeeper"], held["kafka"]
        want_drift.append((at, store, z, k, None if z is None or k is None else k - z))
    got_drift = sorted((r["changed_at"], r["changed_store"], r["zk_offset"], r["kafka_offset"], r["drift"])
                       for r in mart("offset_drift_history") if r["partition"] == 0)
    assert got_drift == sorted(want_drift)
    assert {r["partition"] for r in mart("offset_drift_history")} == set(commits)


def range_owners(consumers: list[str], partitions: int) -> dict[int, str]:
    """The 0.8 range assignor for one topic and one-stream consumers (threads ``<c>-0``)."""
    threads = sorted(f"{c}-0" for c in consumers)
    per, extra = divmod(partitions, len(threads))
    out, p = {}, 0
    for i, t in enumerate(threads):
        for _ in range(per + (i < extra)):
            out[p] = t
            p += 1
    return out


def script_states(script: Script, partitions: int = 4) -> list[dict]:
    """Every state of group g from the script's record: triggers (its consumers joining or
    leaving, a broker change while it has consumers), the consumers then, the owners it ended
    with, and their audit against the range assignment."""
    changes = sorted(script.changes, key=lambda c: c.zxid)
    triggers, consumers = [], set()
    for c in changes:
        if "/consumers/g/ids/" in c.path:
            triggers.append(c.zxid)
        elif c.path.startswith("/brokers/ids/") and consumers:
            triggers.append(c.zxid)
        if "/consumers/g/ids/" in c.path:
            (consumers.add if c.op == "create" else consumers.discard)(c.path.rsplit("/", 1)[1])
    triggers = sorted(set(triggers))
    states = []
    for k, start in enumerate(triggers):
        end = triggers[k + 1] if k + 1 < len(triggers) else None
        live, owners = set(), {}
        for c in changes:
            if "/consumers/g/ids/" in c.path and c.zxid <= start:
                (live.add if c.op == "create" else live.discard)(c.path.rsplit("/", 1)[1])
            if "/owners/" in c.path and (end is None or c.zxid < end):
                p = int(c.path.rsplit("/", 1)[1])
                if c.op == "delete":
                    owners.pop(p, None)
                else:
                    owners[p] = (c.value.decode(), c.zxid)
        expected = range_owners(sorted(live), partitions)
        audit = {p: ("ok" if owners.get(p, (None,))[0] == want else "wrong_owner" if p in owners else "unowned",
                     owners.get(p, (None,))[0]) for p, want in expected.items()}
        # settled (window 0, WINDOW_0): it ended with every expected partition owned
        states.append({"state_zxid": start, "next_zxid": end, "expected": expected, "audit": audit,
                       "settled": all(s != "unowned" for s, _ in audit.values()),
                       "wrong": any(s == "wrong_owner" for s, _ in audit.values())})
    return states


def test_every_settled_state_is_audited(history, spark):
    from pipelines.spark.build import build_core

    script, wh, _ = history
    build_core(RunContext(wh, RUN, quiet=True), {}, WINDOW_0)
    want = script_states(script)
    got = sorted(read(wh, "core/rebalance_states"), key=lambda r: r["state_zxid"])
    assert [(r["state_zxid"], r["next_zxid"], r["settled"]) for r in got] == [
        (s["state_zxid"], s["next_zxid"], s["settled"]) for s in want]
    audit = {(r["state_zxid"], r["partition"]): r for r in read(wh, "core/settled_audit")}
    for s in want:
        for p, (status, owner) in s["audit"].items():
            r = audit[(s["state_zxid"], p)]
            assert (r["expected_owner"], r["observed_owner"], r["status"]) == (s["expected"][p], owner, status)
    # the wrong owners c3 joining left in place lasted until the next trigger (the broker
    # removed), and today's owners no longer show them
    wrong = [s for s in want if s["wrong"]]
    assert len(wrong) == 1 and wrong[0]["settled"] and want[-1]["settled"] and not want[-1]["wrong"]
    assert {r["held_until_zxid"] for r in audit.values() if r["status"] == "wrong_owner"} == {wrong[0]["next_zxid"]}

    # the marts: one rebalance per state, a storm past the configured rate, the owners' history
    from pipelines.transform.dbt_runner import run_dbt

    run_dbt(RunContext(wh, RUN, quiet=True), select=["+rebalances", "+ownership_history"])
    storm_rate = yaml.safe_load((REPO / "dbt_project.yml").read_text())["vars"]["rebalance_storm_per_hour"]
    rebalances = sorted(read(wh, "marts/rebalances"), key=lambda r: r["state_zxid"])
    assert [(r["state_zxid"], r["settled"], r["wrong_owner_partitions"]) for r in rebalances] == [
        (s["state_zxid"], s["settled"], sum(st == "wrong_owner" for st, _ in s["audit"].values())) for s in want]
    # the whole script runs within seconds: the k-th rebalance has k in its hour
    assert [r["is_storm"] for r in rebalances] == [k > storm_rate for k in range(1, len(want) + 1)]
    owners = read(wh, "marts/ownership_history")
    written = [c for c in script.changes if "/owners/" in c.path and c.op == "create"]
    assert sorted((r["from_zxid"], r["owner"]) for r in owners) == sorted((c.zxid, c.value.decode()) for c in written)


def test_report_shows_the_timeline_the_past_wrong_owner_and_the_storm(history):
    """Runs after test_every_settled_state_is_audited (same module warehouse): the report's
    rebalance section, rendered by its Jinja2 template."""
    from pipelines.report.facts import gather
    from pipelines.report.page import render

    script, wh, _ = history
    if not wh.partition_dir("marts/rebalances", RUN).is_dir():
        pytest.skip("needs the build of test_every_settled_state_is_audited")
    want = script_states(script)
    facts = gather(wh, RUN)
    r = facts.rebalances
    assert r.totals == {("zookeeper", "g"): len(want)}
    wrong = next(s for s in want if s["wrong"])
    past = {(w["partition"], w["expected_owner"], w["observed_owner"]) for w in r.past_wrong}
    assert past == {(p, wrong["expected"][p], owner) for p, (st, owner) in wrong["audit"].items() if st != "ok"}
    assert [s["group_id"] for s in r.storms] == ["g"]
    html = render(facts)
    assert html.count('class="past-wrong"') == len(past)
    assert html.count('<tr class="rebalance') == len(want)
    assert 'class="storm"' in html
