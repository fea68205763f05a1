"""``kaudit extract offsets`` and ``kaudit extract log-end`` through the real CLI."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from pipelines.cli import main
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.segments import (
    assignment,
    batch,
    control_batch,
    group_metadata_key,
    group_metadata_value,
    group_partition,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    subscription,
    write_segment,
)

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def _cluster(root):
    """A broker log dir: two offsets partitions (one over two segments, a transaction, a
    corrupt tail) and a data topic."""
    logs = root / "kafka-logs"
    g = "payments"
    p = group_partition(g)
    m = dict(member_id="c-1", client_id="cl", client_host="/1.2.3.4",
             subscription=subscription(["pay"], version=1), assignment=assignment({"pay": [0, 1]}))
    part = logs / f"__consumer_offsets-{p}"
    write_segment(part / segment_name(0), [
        batch([(group_metadata_key(g),
                group_metadata_value(generation=1, protocol="range", leader="c-1", state_ts=T0, members=[m]))],
              base_offset=0, timestamp_ms=T0),
        batch([(offset_commit_key(g, "pay", 0), offset_commit_value(10, commit_ts=T0)),
               (offset_commit_key(g, "pay", 1), offset_commit_value(20, commit_ts=T0))],
              base_offset=1, timestamp_ms=T0, codec="snappy"),
        batch([(offset_commit_key(g, "pay", 0), offset_commit_value(15, commit_ts=T0 + 1))],
              base_offset=3, timestamp_ms=T0, producer_id=77, producer_epoch=0, base_sequence=0, transactional=True),
    ])
    tail = batch(
        [(offset_commit_key(g, "pay", 1), offset_commit_value(25, commit_ts=T0 + 2))], base_offset=5, timestamp_ms=T0
    )
    write_segment(part / segment_name(4), [
        control_batch(base_offset=4, producer_id=77, producer_epoch=0, commit=True, timestamp_ms=T0 + 1), tail[:-4]])
    write_segment(logs / "__consumer_offsets-0" / segment_name(0), [
        batch([(offset_commit_key("legacy", "old", 0, version=0), offset_commit_value(5, commit_ts=T0, version=0))],
              base_offset=0, magic=0, timestamp_ms=T0)])
    write_segment(logs / "pay-0" / segment_name(0), [batch([(b"k", b"v")] * 30, base_offset=0, timestamp_ms=T0)])
    write_segment(logs / "pay-1" / segment_name(0), [batch([(b"k", b"v")] * 12, base_offset=0, timestamp_ms=T0 + 5)])
    write_segment(
        logs / "__transaction_state-0" / segment_name(0), [batch([(b"k", b"v")], base_offset=0, timestamp_ms=T0)]
    )
    return logs, p


def _run(args):
    with pytest.raises(SystemExit) as ex:
        main(args)
    return ex.value.code


def test_extract_offsets_cli(tmp_path, capsys):
    logs, p = _cluster(tmp_path)
    wh = tmp_path / "wh"
    assert _run(["--warehouse", str(wh), "--run-id", "r1", "extract", "offsets", str(logs), "--workers", "2"]) == 0
    err = capsys.readouterr().err
    assert "3 segment files in 2 partitions" in err and "quarantined" in err
    w = Warehouse(wh)
    commits = read_arrow(w, "raw/offset_commits", "r1").to_pylist()
    got = sorted(
        (c["offsets_partition"], c["log_offset"], c["group_id"], c["committed_offset"], c["txn_state"]) for c in commits
    )
    assert got == [(0, 0, "legacy", 5, None), (p, 1, "payments", 10, None), (p, 2, "payments", 20, None),
                   (p, 3, "payments", 15, "committed")]
    assert [r["generation"] for r in read_arrow(w, "raw/group_metadata", "r1").to_pylist()] == [1]
    assert [(r["member_id"], r["subscribed_topics"]) for r in read_arrow(w, "raw/group_members", "r1").to_pylist()] == [
        ("c-1", ["pay"])
    ]
    assert read_arrow(w, "raw/group_assignments", "r1").num_rows == 2
    assert read_arrow(w, "raw/coordinator_records", "r1").num_rows == 0
    (q,) = read_arrow(w, "raw/quarantine", "r1").to_pylist()
    marker = control_batch(base_offset=4, producer_id=77, producer_epoch=0, commit=True, timestamp_ms=T0 + 1)
    assert q["source"] == "offsets"
    assert q["location"].endswith(f"__consumer_offsets-{p}/{segment_name(4)}:{len(marker)}")
    assert q["reason"].startswith("TruncatedBatch")

    # a single .log file: the partition comes from its dir; same run id replaces the partition
    one = logs / f"__consumer_offsets-{p}" / segment_name(0)
    assert _run(["--warehouse", str(wh), "--run-id", "r1", "--quiet", "extract", "offsets", str(one)]) == 0
    commits = read_arrow(w, "raw/offset_commits", "r1").to_pylist()
    got = sorted((c["offsets_partition"], c["log_offset"], c["txn_state"]) for c in commits)
    assert got == [(p, 1, None), (p, 2, None), (p, 3, "pending")]
    assert read_arrow(w, "raw/quarantine", "r1").num_rows == 0


def test_extract_offsets_empty_and_unreadable(tmp_path, capsys):
    wh = tmp_path / "wh"
    w = Warehouse(wh)
    # an empty partition (its active segment is an empty file) is readable: empty tables
    (tmp_path / "logs" / "__consumer_offsets-0").mkdir(parents=True)
    (tmp_path / "logs" / "__consumer_offsets-0" / segment_name(0)).write_bytes(b"")
    assert _run(["--warehouse", str(wh), "--run-id", "e", "extract", "offsets", str(tmp_path / "logs")]) == 0
    for t in ("raw/offset_commits", "raw/group_metadata", "raw/group_members", "raw/group_assignments",
              "raw/coordinator_records", "raw/quarantine"):
        assert w.exists(t, "e") and read_arrow(w, t, "e").num_rows == 0
    capsys.readouterr()
    # paths that hold nothing readable: one line naming the path, exit 1, no table
    (tmp_path / "empty").mkdir()
    (tmp_path / "dir.log").mkdir()
    garbage = tmp_path / "garbage" / "__consumer_offsets-3" / segment_name(0)
    garbage.parent.mkdir(parents=True)
    garbage.write_bytes(random.Random(1).randbytes(1 << 20))
    no_segments = ("no __consumer_offsets segments "
                   "(expected a Kafka log dir, __consumer_offsets-N dirs or .log files)")
    expected = {
        tmp_path / "nope": "no such file or directory",
        tmp_path / "empty": no_segments,
        tmp_path / "dir.log": no_segments,
        garbage: f"no readable record batch in 1 segment files ({1 << 20} bytes; expected Kafka log segments)",
    }
    for path, why in expected.items():
        assert _run(["--warehouse", str(wh), "--run-id", "e2", "extract", "offsets", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1] == f"kaudit: {path}: {why}" and "Traceback" not in err
        assert not w.exists("raw/offset_commits", "e2") and not w.exists("raw/quarantine", "e2")
    # some good batches and some garbage: readable, the garbage quarantined
    mixed = tmp_path / "mixed" / "__consumer_offsets-3" / segment_name(0)
    good = [batch([(offset_commit_key("g", "t", i), offset_commit_value(i, commit_ts=T0))],
                  base_offset=i, timestamp_ms=T0)
            for i in range(2)]
    write_segment(mixed, [good[0], b"\x13" * 5000, good[1]])
    assert _run(["--warehouse", str(wh), "--run-id", "e3", "extract", "offsets", str(mixed)]) == 0
    assert read_arrow(w, "raw/offset_commits", "e3")["log_offset"].to_pylist() == [0, 1]
    assert read_arrow(w, "raw/quarantine", "e3")["location"].to_pylist() == [f"{mixed}:{len(good[0])}"]


def test_extract_log_end_unreadable_and_usage(tmp_path, capsys):
    wh = tmp_path / "wh"
    assert _run(["--warehouse", str(wh), "extract", "log-end"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "kaudit: extract log-end: give Kafka log dirs (PATH...), --offsets-file FILE or --topic-configs FILE"
    (tmp_path / "logs" / "__consumer_offsets-0").mkdir(parents=True)
    assert _run(["--warehouse", str(wh), "extract", "log-end", str(tmp_path / "logs")]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"kaudit: {tmp_path / 'logs'}: no topic-partition dirs of data topics "
        "(expected a Kafka log dir or <topic>-<N> dirs)")
    seg = tmp_path / "logs" / "t-0" / segment_name(0)
    seg.parent.mkdir()
    seg.write_bytes(random.Random(2).randbytes(1 << 20))
    assert _run(["--warehouse", str(wh), "extract", "log-end", str(tmp_path / "logs")]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"kaudit: {tmp_path / 'logs'}: no readable record batch in the segments of 1 "
        f"partition dirs ({1 << 20} bytes; expected Kafka log segments)")
    assert not Warehouse(wh).run_ids("raw/log_end_offsets")


def test_extract_log_end_cli_with_offsets_file(tmp_path):
    logs, _ = _cluster(tmp_path)
    ends_file = tmp_path / "ends.txt"
    ends_file.write_text("pay:1:40\nother:0:9\n")
    wh = tmp_path / "wh"
    args = ["--warehouse", str(wh), "--run-id", "r", "extract", "log-end", str(logs), "--offsets-file", str(ends_file)]
    assert _run(args) == 0
    rows = read_arrow(Warehouse(wh), "raw/log_end_offsets", "r").to_pylist()
    got = [(r["topic"], r["partition"], r["log_start_offset"], r["log_end_offset"]) for r in rows]
    assert got == [("other", 0, None, 9), ("pay", 0, 0, 30), ("pay", 1, 0, 40)]
    assert rows[1]["max_timestamp"].timestamp() * 1000 == T0
    bad = tmp_path / "bad.txt"
    bad.write_text("pay-0-3\n")
    assert _run(["--warehouse", str(wh), "--run-id", "r2", "extract", "log-end", "--offsets-file", str(bad)]) == 1


def test_extract_log_end_cli_with_topic_configs(tmp_path):
    configs = tmp_path / "topics.properties"
    configs.write_text("pay:retention.ms=3600000\nother:retention.bytes=1024\n")
    wh = tmp_path / "wh"
    args = ["--warehouse", str(wh), "--run-id", "r", "extract", "log-end", "--topic-configs", str(configs)]
    assert _run(args) == 0
    rows = read_arrow(Warehouse(wh), "raw/topic_configs", "r").to_pylist()
    assert [(r["topic"], r["config_name"], r["config_value"], r["config_file"]) for r in rows] == [
        ("pay", "retention.ms", "3600000", f"{configs}:1"), ("other", "retention.bytes", "1024", f"{configs}:2")]
    configs.write_text("pay retention.ms 1\n")
    assert _run(["--warehouse", str(wh), "--run-id", "r2", "extract", "log-end", "--topic-configs", str(configs)]) == 1
    assert list(Warehouse(wh).run_ids("raw/topic_configs")) == ["r"]


def test_console_script_exit_code(tmp_path):
    """The real process: one line on stderr, exit 1, no traceback."""
    r = subprocess.run([sys.executable, "-m", "pipelines", "--warehouse", str(tmp_path), "extract", "offsets",
                        str(tmp_path / "x.log")], capture_output=True, text=True)
    assert r.returncode == 1
    run_line, error = r.stderr.strip().splitlines()
    assert run_line.startswith("run ") and run_line.endswith(" (new)")
    assert error == f"kaudit: {tmp_path / 'x.log'}: no such file or directory"
