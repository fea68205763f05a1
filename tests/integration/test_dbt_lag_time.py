"""Lag in time, data-loss risk, offset resets and stuck partitions (issue 21) through real
extracts and real dbt on local Spark: a data topic written with kafka-python's builders
(CreateTime batches, a compacted batch, a LogAppendTime batch, ``.timeindex`` files, a log-start
checkpoint past the oldest segment's start) and ``__consumer_offsets`` commits of six groups.
Expected rows come from what the test wrote (the oracle below reads the test's own batch list).
"""

from __future__ import annotations

import datetime as dt

import pytest
from test_dbt_build import read_mart  # (tests/integration)

from pipelines.context import RunContext
from pipelines.kafka.extract import extract_log_end, extract_offsets
from pipelines.transform.dbt_runner import run_dbt
from testkit.segments import batch, offset_commit_key, offset_commit_value, write_segment
from testkit.timestamps import v2_batch, write_partition

pytestmark = pytest.mark.integration

T0 = 1_704_103_200_000  # 2024-01-01 10:00:00 UTC
S = 1000
WEEK_MS = 7 * 24 * 3600 * S
# (present offsets, create times, base, last, log append time) per batch, per segment
SEGMENTS = [
    [(list(range(b, b + 10)), [T0 + o * S for o in range(b, b + 10)], b, b + 9, None) for b in range(0, 50, 10)],
    [
        (list(range(50, 60)), [T0 + o * S for o in range(50, 60)], 50, 59, None),
        (list(range(65, 70)), [T0 + o * S for o in range(65, 70)], 60, 69, None),  # compacted: 60-64 gone
    ],
    [
        (list(range(70, 2070)), [T0 + S] * 2000, 70, 2069, T0 + 100 * S),  # LogAppendTime
        (list(range(2070, 2080)), [T0 + (110 + i) * S for i in range(10)], 2070, 2079, None),
    ],
]
LOG_START = 20  # the checkpoint: records 0-19 deleted, their segment still present
COMMITS = {  # group: [(committed offset, commit time in seconds after T0)]
    "lagging": [(10, 15), (30, 45), (60, 120)],
    "lost": [(5, 10), (15, 20)],
    "risk": [(25, 30)],
    "reset": [(10, 12), (20, 22), (30, 32), (40, 42), (2080, 125)],
    "mid": [(1000, 121)],
    "stuck": [(45, t) for t in (50, 55, 60, 65, 70)],
}


def _t(ms):
    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _batches():
    """(base, last, first present record's timestamp, max timestamp, LogAppendTime) of each batch."""
    out = []
    for seg in SEGMENTS:
        for _, times, base, last, lat in seg:
            out.append((base, last, lat if lat else times[0], lat if lat else max(times), lat is not None))
    return out


def record_at(offset):
    """(timestamp of the record at ``offset`` or the next present one, exact) - None past the end."""
    for base, last, first, _, lat in _batches():
        if last >= offset:
            return first, lat or offset <= base
    return None, True


def head_at(ms):
    done = [(last + 1, mx) for _, last, _, mx, _ in _batches() if mx <= ms]
    return (max(e for e, _ in done), max(m for _, m in done)) if done else (None, None)


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    from pipelines.warehouse.warehouse import Warehouse

    root = tmp_path_factory.mktemp("lagtime")
    logs = root / "logs"
    write_partition(logs / "orders-0",
                    [[v2_batch(o, t, base_offset=b, last_offset=e, log_append_time=a) for o, t, b, e, a in seg]
                     for seg in SEGMENTS])
    (logs / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {LOG_START}\n")
    commits = sorted(((t, g, o) for g, cs in COMMITS.items() for o, t in cs))
    write_segment(logs / "__consumer_offsets-0" / f"{0:020d}.log", [
        batch([(offset_commit_key(g, "orders", 0), offset_commit_value(o, commit_ts=T0 + t * S))],
              base_offset=i, timestamp_ms=T0 + t * S)
        for i, (t, g, o) in enumerate(commits)
    ])
    wh = Warehouse(root / "wh")
    ctx = RunContext(wh, "lt1", quiet=True)
    extract_offsets(ctx, [logs], workers=1)
    extract_log_end(ctx, [logs], None)
    run_dbt(ctx, select=["+consumer_lag", "+commit_lag_history", "+data_loss_risk", "+offset_resets",
                         "+stuck_partitions"])
    return wh


def _mart(wh, name):
    return read_mart(wh, f"marts/{name}")


LOG_END, LOG_END_MS = 2080, T0 + 119 * S
CLOCK_MS = T0 + 125 * S  # the newest input timestamp: the last commit


def test_lag_seconds_per_group(built):
    rows = {r["group_id"]: r for r in _mart(built, "consumer_lag")}
    assert set(rows) == set(COMMITS)
    for group, commits in COMMITS.items():
        offset = commits[-1][0]
        ts, exact = record_at(offset)
        want = 0.0 if offset >= LOG_END or ts is None else max((LOG_END_MS - ts) / 1000, 0.0)
        r = rows[group]
        assert (r["lag"], r["committed_record_at"], r["log_end_at"]) == (LOG_END - offset, _t(ts), _t(LOG_END_MS))
        assert (r["lag_seconds"], r["lag_seconds_exact"]) == (want, exact), group
    # spot checks of the rules themselves: a compacted gap, a LogAppendTime batch
    assert rows["lagging"]["lag_seconds"] == 119 - 65
    assert rows["mid"]["lag_seconds"] == 119 - 100 and rows["mid"]["lag_seconds_exact"]


def test_lag_at_each_commit(built):
    rows = {(r["group_id"], r["commit_seq"]): r for r in _mart(built, "commit_lag_history")}
    assert len(rows) == sum(len(c) for c in COMMITS.values())
    for group, commits in COMMITS.items():
        for seq, (offset, t) in enumerate(commits, 1):
            head, head_ms = head_at(T0 + t * S)
            ts, _ = record_at(offset)
            r = rows[(group, seq)]
            assert (r["head_offset"], r["head_at"]) == (head, _t(head_ms)), (group, seq)
            if head is None:
                assert r["lag_at_commit"] is None and r["lag_seconds_at_commit"] is None
                continue
            assert r["lag_at_commit"] == max(head - offset, 0)
            assert r["lag_seconds_at_commit"] == (0.0 if offset >= head else max((head_ms - ts) / 1000, 0.0))


def test_data_loss_risk(built):
    rows = {r["group_id"]: r for r in _mart(built, "data_loss_risk")}
    oldest_end = SEGMENTS[1][0][2]  # the second segment's base offset
    oldest_max = max(max(t) for _, t, *_ in SEGMENTS[0])
    for group, commits in COMMITS.items():
        offset = commits[-1][0]
        r = rows[group]
        assert r["log_start_offset"] == LOG_START
        if offset < LOG_START:
            assert (r["status"], r["records_lost"], r["deletes_at"]) == ("lost", LOG_START - offset, None)
        elif offset < oldest_end:
            assert (r["status"], r["records_at_risk"]) == ("at_risk", oldest_end - offset), group
            assert r["deletes_at"] == _t(oldest_max + WEEK_MS)  # no topic config: the broker default
            assert r["seconds_to_loss"] == (oldest_max + WEEK_MS - CLOCK_MS) / 1000
            assert r["retention_source"] == "default"
        else:
            assert (r["status"], r["records_lost"], r["records_at_risk"]) == ("ok", 0, 0), group
    assert {g for g, r in rows.items() if r["status"] == "lost"} == {"lost"}


def test_offset_resets_and_stuck_partitions(built):
    (reset,) = _mart(built, "offset_resets")
    before = COMMITS["reset"][-2][0]
    head, head_ms = head_at(T0 + COMMITS["reset"][-1][1] * S)
    assert (reset["group_id"], reset["reset_to"], reset["previous_committed_offset"], reset["committed_offset"]) == (
        "reset", "latest", before, head)
    assert reset["size_records"] == head - before
    assert reset["size_seconds"] == (head_ms - record_at(before)[0]) / 1000

    (stuck,) = _mart(built, "stuck_partitions")
    commits = COMMITS["stuck"]
    heads = [head_at(T0 + t * S)[0] for _, t in commits]
    assert (stuck["group_id"], stuck["committed_offset"], stuck["commits"], stuck["still_stuck"]) == (
        "stuck", 45, len(commits), True)
    assert (stuck["head_offset_at_start"], stuck["head_offset_at_end"], stuck["records_behind"]) == (
        heads[0], heads[-1], heads[-1] - 45)


def test_gx_no_commit_below_log_start_unflagged(built, spark):
    from pipelines.quality.run import run_validation
    from pipelines.quality.sources import RunTables
    from pipelines.quality.views import build_view

    entries = run_validation(RunContext(built, "lt1", quiet=True))
    (entry,) = [e for e in entries if e["expectation"] == "no_commit_below_log_start_unflagged"]
    below = [g for g, c in COMMITS.items() if c[-1][0] < LOG_START]
    assert (entry["success"], entry["element_count"]) == (True, len(below))
    # the same view without the mart's flags: the commit below the log start is caught
    tables = RunTables(built, "lt1", spark)
    tables._cache["marts/data_loss_risk"] = tables["marts/data_loss_risk"].limit(0)
    rows = build_view("commits_below_log_start", tables).collect()
    assert [(r.group_id, r.committed_offset, r.log_start_offset, r.flagged) for r in rows] == [
        (g, COMMITS[g][-1][0], LOG_START, False) for g in below]


def test_report_shows_lag_in_time_and_the_findings(built):
    import csv
    import re

    from pipelines.report.write import write_report

    page = write_report(RunContext(built, "lt1", quiet=True))
    text = page.read_text(encoding="utf-8")
    section = text[text.index('<section id="lag-time">'):]
    section = section[:section.index("</section>")]
    # lag in time for every group, the worst first
    lag_rows = re.findall(r'<tr class="lag-time">.*?<b>(.*?)</b>.*?data-v="([0-9.]+)"', section, re.S)
    want = {g: (max((LOG_END_MS - record_at(c[-1][0])[0]) / 1000, 0.0) if c[-1][0] < LOG_END else 0.0)
            for g, c in COMMITS.items()}
    assert [(g, float(v)) for g, v in lag_rows] == sorted(want.items(), key=lambda x: (-x[1], x[0]))
    # stuck at 45, inside the CreateTime batch 40-49: its first record's timestamp (40 s), 79 s before the end
    assert "1 min 19 s" in section and "approx." in section
    assert section.count('<tr class="data-loss lost">') == 1 and section.count('<tr class="data-loss at_risk">') == 2
    assert section.count('<tr class="offset-reset">') == 1 and section.count('<tr class="stuck">') == 1
    before, after = COMMITS["reset"][-2][0], COMMITS["reset"][-1][0]
    assert f"{before:,} → {after:,}" in section and f"{after - before:+,}" in section and "still stuck" in section
    with (page.parent / "findings.csv").open(encoding="utf-8") as f:
        rows = [(r["group_id"], r["status"], r["committed_offset"]) for r in csv.DictReader(f)]
    assert sorted(rows) == sorted([("lost", "data_lost", "15"), ("risk", "data_at_risk", "25"),
                                   ("stuck", "data_at_risk", "45"), ("reset", "offset_reset", "2080"),
                                   ("stuck", "stuck_partition", "45")])
