"""The whole retained past on a real ZooKeeper: a server with a small ``snapCount`` rolls a
snapshot every 10-20 txns while a scripted history plays (testkit.zk_history.play_past: joins
and leaves, owners written in a wrong order and held, a storm, 14 rounds of commits with a
regression, a reset and a stuck partition), then more writes, so the facts lie in the logs
BEFORE the newest snapshot. ``extract zk-snapshot`` + the core build + the dbt marts must find
every one of them, and the records retention deleted under one partition's last commit. Every
expected value comes from the script's record (the zxids and mtimes the server returned) and
the data-topic log the test writes itself, never from kaudit."""

from __future__ import annotations

import datetime as dt
import io
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from rich.console import Console

from pipelines.context import RunContext
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.datadir import list_files
from pipelines.zookeeper.extract import extract_snapshot
from testkit.oracle import range_assign
from testkit.zk_history import Script, play_past
from testkit.zk_server import start_zk

pytestmark = pytest.mark.integration

UTC = dt.UTC
RUN = "past"
SNAP_COUNT = 20  # ZooKeeper rolls a snapshot after snapCount/2 + random(snapCount/2) txns
RECORDS = 1000  # per partition of the data topic the test writes
PER_BATCH = 10
BATCHES = RECORDS // PER_BATCH
LOST = 3  # the partition whose log start retention moved past the group's last commit


@dataclass(frozen=True)
class DataLog:
    """The data topic the test writes: BATCHES batches per partition appended evenly from
    ``start`` to ``end`` (LogAppendTime: every record has its batch's time); retention deleted
    the records of partition LOST below ``lost_from``."""

    start: dt.datetime
    end: dt.datetime
    lost_from: int

    def log_start(self, partition: int) -> int:
        return self.lost_from if partition == LOST else 0

    def batch_time(self, k: int) -> dt.datetime:
        """Append time of the k-th batch (offsets k*PER_BATCH ..) of every partition."""
        return self.start + (self.end - self.start) * k / (BATCHES - 1)


@pytest.fixture(scope="module")
def past(tmp_path_factory):
    """(script, planted, warehouse, extract meta, snapshot zxids): the history played on a
    server with a small snapCount, its data dir extracted while the server still runs."""
    root = tmp_path_factory.mktemp("zk-past")
    server = start_zk(root / "zk", extra_conf=f"snapCount={SNAP_COUNT}\n")
    script = Script(server.hosts)
    try:
        planted = play_past(script)
        snaps = [z for z, _ in list_files(server.data_dir / "version-2", "snapshot")]
        wh = Warehouse(root / "warehouse")
        meta = extract_snapshot(RunContext(wh, RUN, console=Console(file=io.StringIO())), path=server.data_dir)
    finally:
        script.stop()
        server.stop()
    return script, planted, wh, meta, snaps


def read(wh: Warehouse, table: str) -> list[dict]:
    return read_arrow(wh, table, RUN, with_run_id=False).to_pylist()


def ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, UTC)


def test_the_past_lies_before_the_newest_snapshot_and_is_all_extracted(past):
    script, planted, wh, meta, snaps = past
    assert len(snaps) >= 3, snaps
    newest = max(snaps)
    facts = [*planted.joins, *planted.leaves, planted.wrong_state, planted.wrong_until, *planted.storm,
             planted.last_fact]
    assert max(facts) < newest  # every planted fact is older than the newest snapshot
    history = meta["history"]
    # the history starts at the oldest snapshot (the server's first, empty) and ends at the tree
    assert history["start_zxid"] == min(snaps) and Path(history["snapshot"]).name == f"snapshot.{min(snaps):x}"
    assert history["end_zxid"] == meta["zxid"] and history["snapshots"] == len(snaps) and history["cuts"] == []
    assert history["txns"] == meta["zxid"] - min(snaps)  # one epoch: every zxid from the start is a txn
    # every change the script made is a row, with the zxid and time the server returned
    rows = [r for r in read(wh, "raw/znode_changes") if r["op"] != "snapshot"]
    got = Counter((r["op"], r["path"], r["zxid"], r["value"], r["session"]) for r in rows)
    want = Counter((c.op, c.path, c.zxid, c.value, c.session) for c in script.changes
                   if c.path.startswith(("/consumers/", "/brokers/ids/", "/brokers/topics/")))
    assert got == want
    times = {(r["op"], r["path"], r["zxid"]): r["time"] for r in rows}
    for c in script.changes:
        if c.mtime is not None and c.path.startswith("/consumers/"):
            assert times[(c.op, c.path, c.zxid)] == ts(c.mtime)
    assert history["first_txn_ms"] <= min(c.mtime for c in script.changes if c.mtime)
    assert history["last_txn_ms"] >= max(c.mtime for c in script.changes if c.mtime)
    assert meta["quarantined"] == 0 and meta["digest_verified"] is True


@pytest.fixture(scope="module")
def data_log(past) -> DataLog:
    """The data topic appended while the group committed: from 1 s before the script's first
    offset write to 1 s after its last, so the log end moves under the stuck partition; the
    records of partition LOST deleted up to 40 past its last commit (data lost)."""
    script = past[0]
    written = [c.mtime for c in script.changes if "/offsets/" in c.path and c.mtime is not None]
    last = zk_writes(script)[LOST][-1][2]
    return DataLog(ts(min(written) - 1000), ts(max(written) + 1000), lost_from=last // PER_BATCH * PER_BATCH + 40)


def write_data_topic(wh: Warehouse, log: DataLog, partitions: int) -> None:
    """The data topic's log as the test defines it: RECORDS records per partition in batches of
    PER_BATCH (raw/batch_timestamps and raw/log_end_offsets)."""
    batches = [{"topic": "t", "partition": p, "segment_base_offset": log.log_start(p), "position": k * 100,
                "size_bytes": 100, "magic": 2, "base_offset": k * PER_BATCH,
                "last_offset": k * PER_BATCH + PER_BATCH - 1, "record_count": PER_BATCH, "is_control": False,
                "timestamp_type": "LogAppendTime", "first_timestamp": log.batch_time(k),
                "max_timestamp": log.batch_time(k)}
               for p in range(partitions) for k in range(log.log_start(p) // PER_BATCH, BATCHES)]
    wh.write_table("raw/batch_timestamps", RUN, pa.Table.from_pylist(batches, SCHEMAS["raw/batch_timestamps"]))
    last = log.batch_time(BATCHES - 1)
    wh.write_table("raw/log_end_offsets", RUN, pa.Table.from_pylist(
        [{"topic": "t", "partition": p, "log_start_offset": log.log_start(p), "log_end_offset": RECORDS,
          "max_timestamp": last} for p in range(partitions)], SCHEMAS["raw/log_end_offsets"]))


@pytest.fixture(scope="module")
def built(past, data_log, spark):
    """The core build and the marts of the extracted history (and the test's data topic)."""
    from pipelines.spark.build import build_core
    from pipelines.transform.dbt_runner import run_dbt

    _, _, wh, _, _ = past
    write_data_topic(wh, data_log, 4)
    build_core(RunContext(wh, RUN, quiet=True), {})
    run_dbt(RunContext(wh, RUN, quiet=True), select=[
        "+rebalances", "+commit_frequency", "+offset_regressions", "+consumer_lag", "+offset_resets",
        "+stuck_partitions", "+data_loss_risk"])
    return wh


def zk_writes(script: Script) -> dict[int, list[tuple[int, int, int]]]:
    """partition -> [(zxid, mtime ms, offset)] of the script's offset writes, in order."""
    out = defaultdict(list)
    for c in script.changes:
        if "/offsets/" in c.path and c.op in ("create", "set"):
            out[int(c.path.rsplit("/", 1)[1])].append((c.zxid, c.mtime, int(c.value)))
    return out


def test_joins_leaves_and_the_past_wrong_owner(past, built):
    script, planted, _, _, _ = past
    wh = built
    states = {r["state_zxid"]: r for r in read(wh, "core/rebalance_states")}
    # every join and leave of the group, and the broker leaving while it had consumers, began a state
    triggers = {*planted.joins, *planted.leaves, planted.wrong_until}
    assert triggers <= set(states), sorted(triggers - set(states))
    assert set(states) <= triggers | {c.zxid for c in script.changes if c.path.startswith("/brokers/ids/")}
    # the state c3's join began, held for longer than a settle window, ended with wrong owners
    assert states[planted.wrong_state]["next_zxid"] == planted.wrong_until
    expected = range_assign(list(range(4)), ["c1-0", "c3-0"])  # the 0.8 range assignor, one thread each
    audit = {r["partition"]: r for r in read(wh, "core/settled_audit") if r["state_zxid"] == planted.wrong_state}
    for p, written in planted.wrong_owners.items():
        r = audit[p]
        assert (r["expected_owner"], r["observed_owner"], r["status"]) == (expected[p], written, "wrong_owner")
    assert audit[0]["status"] == "ok"

    # the report's past wrong owners name them
    from pipelines.report.facts import gather

    past_wrong = {(w["partition"], w["expected_owner"], w["observed_owner"])
                  for w in gather(wh, RUN).rebalances.past_wrong if w["state_zxid"] == planted.wrong_state}
    assert past_wrong == {(p, expected[p], o) for p, o in planted.wrong_owners.items()}


def test_the_storm(past, built):
    _, planted, _, _, _ = past
    rebalances = read(built, "marts/rebalances")
    zk = [r for r in rebalances if r["source"] == "zookeeper" and r["group_id"] == "g"]
    storm = {r["state_zxid"] for r in zk if r["is_storm"]}
    assert set(planted.storm) <= storm  # 8 membership changes within seconds: past 3 an hour
    from pipelines.report.facts import gather

    assert [s["group_id"] for s in gather(built, RUN).rebalances.storms] == ["g"]


def test_commit_counts_regressions_and_lag_in_seconds(past, data_log, built):
    script, planted, _, _, _ = past
    wh = built
    writes = zk_writes(script)
    assert [len(writes[p]) for p in range(4)] == [14] * 4
    want = Counter()
    for p, rows in writes.items():
        for _, ms, _ in rows:
            want[(p, ts(ms).replace(minute=0, second=0, microsecond=0))] += 1
    got = {(r["partition"], r["window_start"]): r["commits"] for r in read(wh, "marts/commit_frequency")
           if r["source"] == "zookeeper"}
    assert got == dict(want)

    want_reg = sorted((p, zxid, before, offset) for p, rows in writes.items()
                      for (_, _, before), (zxid, _, offset) in zip(rows, rows[1:], strict=False) if offset < before)
    got_reg = sorted((r["partition"], r["zxid"], r["previous_committed_offset"], r["committed_offset"])
                     for r in read(wh, "marts/offset_regressions") if r["source"] == "zookeeper")
    assert got_reg == want_reg
    assert planted.regression in {(p, b, o) for p, _, b, o in got_reg}

    # lag in seconds: the log end's time - the time of the record at the committed offset (the
    # next present one, where retention deleted it)
    lag = {r["partition"]: r for r in read(wh, "marts/consumer_lag") if r["source"] == "zookeeper"}
    end_at = data_log.batch_time(BATCHES - 1)
    for p in range(4):
        offset = writes[p][-1][2]
        at = max(offset, data_log.log_start(p)) // PER_BATCH
        assert lag[p]["committed_offset"] == offset and lag[p]["lag"] == RECORDS - offset
        assert lag[p]["lag_seconds"] == pytest.approx((end_at - data_log.batch_time(at)).total_seconds(), abs=1e-3)


def test_the_data_lost(past, data_log, built):
    script, _, _, _, _ = past
    last = {p: rows[-1][2] for p, rows in zk_writes(script).items()}
    risk = {r["partition"]: r for r in read(built, "marts/data_loss_risk")
            if r["source"] == "zookeeper" and r["group_id"] == "g"}
    assert set(risk) == set(range(4))
    assert (risk[LOST]["status"], risk[LOST]["committed_offset"], risk[LOST]["records_lost"]) == (
        "lost", last[LOST], data_log.lost_from - last[LOST])
    assert all(risk[p]["status"] != "lost" and risk[p]["records_lost"] == 0 for p in range(4) if p != LOST)


def test_the_reset_and_the_stuck_partition(past, built):
    script, planted, _, _, _ = past
    resets = {(r["partition"], r["previous_committed_offset"], r["committed_offset"], r["reset_to"], r["zxid"])
              for r in read(built, "marts/offset_resets") if r["group_id"] == "g" and r["source"] == "zookeeper"}
    reset_zxid = next(zxid for zxid, _, offset in zk_writes(script)[planted.reset[0]] if offset == planted.reset[2])
    assert resets == {(*planted.reset, "earliest", reset_zxid)}  # the regression (25 back) is no reset
    stuck = [r for r in read(built, "marts/stuck_partitions") if r["group_id"] == "g"]
    assert [(r["source"], r["partition"], r["committed_offset"], r["still_stuck"]) for r in stuck] == [
        ("zookeeper", *planted.stuck, True)]
    # the rounds from the 4th on wrote the stuck offset: 11 commits while the log end moved past it
    assert stuck[0]["commits"] == len(planted.rounds) - 3


def test_the_report_states_the_history_span(past, built):
    script, _, _, meta, snaps = past
    from pipelines.report.facts import gather
    from pipelines.report.page import render

    facts = gather(built, RUN)
    h = facts.summary()["history"]
    assert (h["txns"], h["snapshots"], h["start_zxid"], h["end_zxid"]) == (meta["zxid"] - min(snaps), len(snaps),
                                                                          min(snaps), meta["zxid"])
    # the first txn is the session of the script's first client, just before its first write
    first, last = (ts(f(c.mtime for c in script.changes if c.mtime)) for f in (min, max))
    start, end = dt.datetime.fromisoformat(h["from"]), dt.datetime.fromisoformat(h["to"])
    assert first - dt.timedelta(seconds=5) <= start <= first and end >= last
    html = render(facts)
    assert (f"ZooKeeper history from {start:%Y-%m-%d %H:%M:%S} UTC to {end:%Y-%m-%d %H:%M:%S} UTC, "
            f"{h['txns']:,} txns, {len(snaps)} snapshot(s) (zxid {min(snaps):#x} to {meta['zxid']:#x})." in html)
