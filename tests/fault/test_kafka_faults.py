"""Hostile input for ``kaudit extract offsets`` and ``extract log-end``: the seeded corruption
corpus of ``kafka_damage.py`` (``KAUDIT_FUZZ_CASES`` cases, one damaged file each), the
decompression bomb, a bit flip in a base offset, and kill -9 with the pool's workers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka_damage import (
    KILL_BATCHES,
    KINDS,
    T0,
    alive,
    big_offsets_dir,
    bomb_batch,
    clean_logs,
    damage,
    descendants,
    harmless,
    table_rows,
)

from pipelines.cli import main
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.segments import (
    batch,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

REPO = Path(__file__).resolve().parents[2]
CASES = int(os.environ.get("KAUDIT_FUZZ_CASES", "12"))
CASE_SECONDS = 30


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from pipelines.kafka.log_end import scan_partition
    from pipelines.kafka.segment import warm_up

    root = tmp_path_factory.mktemp("clean")
    layout = clean_logs(root / "logs", seed=0)
    warm_up()  # numba compiles (once per install) before any case is timed
    scan_partition("orders", 0, root / "logs" / "orders-0")
    return root / "logs", layout


def _run(args: list[str], capsys) -> tuple[int, str, float]:
    t = time.perf_counter()
    with pytest.raises(SystemExit) as ex:
        main(args)
    return ex.value.code, capsys.readouterr().err, time.perf_counter() - t


@pytest.mark.parametrize("n", range(CASES))
def test_damaged_log_dir(n, corpus, tmp_path, capsys):
    clean, layout = corpus
    logs = tmp_path / "logs"
    case = damage(layout, clean, logs, seed=1000 + n, kind=KINDS[n % len(KINDS)])
    damaged_bytes = (logs / case.file.rel).read_bytes()
    where = f"{logs / case.file.rel}:{case.at}"
    w = Warehouse(tmp_path / "wh")

    code, err, took = _run(
        ["--warehouse", str(w.root), "--run-id", "o", "extract", "offsets", str(logs), "--workers", "1"], capsys
    )
    assert (code, "Traceback" in err) == (0, False), err
    assert took < CASE_SECONDS
    got = table_rows(w, "o")
    assert len(got) == len({r[1:3] for r in got}), "a log offset twice"
    wrong = set(got) - layout.rows()
    if case.undetectable:  # the documented blind spot: only the damaged batch's rows, moved
        damaged_rows = {r[:2] + r[3:] for i in case.damaged for r in case.file.batches[i].rows}
        assert {r[:2] + r[3:] for r in wrong} <= damaged_rows
    else:
        assert not wrong, (case, sorted(wrong)[:3])
    assert not case.good_rows(layout) - set(got), (case, "good records lost")
    quarantine = read_arrow(w, "raw/quarantine", "o").to_pylist()
    boundary_cut = case.kind == "truncate" and case.at == len(damaged_bytes)
    if (case.file.topic == "__consumer_offsets" and not case.undetectable and not boundary_cut
            and not harmless(case, damaged_bytes)):
        assert where in [q["location"] for q in quarantine], (case, [(q["location"], q["reason"]) for q in quarantine])

    code, err, took = _run(["--warehouse", str(w.root), "--run-id", "e", "extract", "log-end", str(logs)], capsys)
    assert (code, "Traceback" in err) == (0, False), err
    assert took < CASE_SECONDS
    ends = {(r["topic"], r["partition"]): r for r in read_arrow(w, "raw/log_end_offsets", "e").to_pylist()}
    for key, (start, max_start, min_end, end) in case.ends_bounds(layout).items():
        row = ends[key]
        if not (case.undetectable and case.file.topic == key[0] and case.file.partition == key[1]):
            assert start <= row["log_start_offset"] <= max_start, (case, row)
            assert min_end <= row["log_end_offset"] <= end, (case, row)
    damaging = ("length", "magic", "ones", "garbage_insert")
    if case.file.topic == "orders" and case.kind in damaging and not case.undetectable:
        assert where in read_arrow(w, "raw/quarantine", "e")["location"].to_pylist()


@pytest.mark.timeout(120)
def test_resync_through_17_mib_of_ones_is_linear(corpus, tmp_path):
    """17 MiB of 0x01 bytes: every position looks like the start of a magic-1 message of
    16 MiB; resync must not check a CRC at each of them (it took over 120 s)."""
    from pipelines.kafka.log_end import scan_partition
    from pipelines.kafka.offsets import decode_file
    from pipelines.kafka.paths import offsets_segments

    seg = tmp_path / "__consumer_offsets-0" / segment_name(0)
    seg.parent.mkdir()
    seg.write_bytes(b"\x01" * (17 << 20))
    t = time.perf_counter()
    (one,) = offsets_segments([seg])
    q = decode_file(one).tables["raw/quarantine"].to_pylist()
    assert [(x["location"], x["reason"].split(":")[0]) for x in q] == [(f"{seg}:0", "CrcMismatch")]
    ends = scan_partition("__consumer_offsets", 0, seg.parent)
    assert ends.batches == 0 and [q["location"] for q in ends.quarantine] == [f"{seg}:0"]
    assert time.perf_counter() - t < 20


def _bomb_segment(tmp_path: Path, codec: str) -> tuple[Path, list[bytes]]:
    def commit(i):
        return batch(
            [(offset_commit_key("g", "t", i), offset_commit_value(i, commit_ts=T0))], base_offset=i, timestamp_ms=T0
        )

    good = [commit(0), bomb_batch(commit(1), codec, 2 << 30), commit(2)]
    seg = tmp_path / "logs" / "__consumer_offsets-0" / segment_name(0)
    write_segment(seg, good)
    return seg, good


def _kaudit(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipelines", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


# Runs a command and writes its exit code and peak RSS (KiB) to the file argv[1]. A child's
# ru_maxrss starts at what its parent held when it forked (Linux copies the high-water mark with
# the memory), so the CLI is forked from this small process, not from the test's (which holds
# Spark, pyarrow and whatever earlier tests on its worker loaded).
SMALL_PARENT = (
    "import os, subprocess, sys; p = subprocess.Popen(sys.argv[2:]); _, status, usage = os.wait4(p.pid, 0); "
    "open(sys.argv[1], 'w').write(f'{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}')"
)


@pytest.mark.integration  # the CLI as a process, 2 GiB of zeros behind it
@pytest.mark.parametrize("codec", ["zstd", "gzip"])
def test_decompression_bomb_is_quarantined_in_little_memory(tmp_path, codec):
    """A batch of one record whose records are 2 GiB of zeros (65 KB of zstd, 2 MB of gzip):
    stopped at 1 MiB (1 record x KAUDIT_MAX_RECORD_BYTES), quarantined with file:byte and the
    reason; the process stays small."""
    seg, parts = _bomb_segment(tmp_path, codec)
    peak = tmp_path / "peak"
    args = ("--warehouse", str(tmp_path / "wh"), "--run-id", "b", "extract", "offsets", str(seg))
    p = subprocess.Popen([sys.executable, "-c", SMALL_PARENT, str(peak), sys.executable, "-m", "pipelines", *args],
                         cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = p.communicate()[1]
    code, max_rss = (int(x) for x in peak.read_text().split())
    assert code == 0 and "Traceback" not in err, err
    assert max_rss < 600 * 1024, f"max RSS {max_rss // 1024} MB"
    w = Warehouse(tmp_path / "wh")
    assert read_arrow(w, "raw/offset_commits", "b")["log_offset"].to_pylist() == [0, 2]
    (q,) = read_arrow(w, "raw/quarantine", "b").to_pylist()
    assert q["location"] == f"{seg}:{len(parts[0])}"
    assert q["reason"] == f"DecompressionBomb: {codec} data decompresses to more than {1 << 20} bytes; stopped there"


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_every_codec_stops_at_the_limit(codec):
    from kafka import codec as kcodec

    from pipelines.kafka.batches import decompress
    from pipelines.kafka.errors import DecompressionBomb

    zeros = bytes(8 << 20)
    data = {1: kcodec.gzip_encode, 2: lambda d: kcodec.snappy_encode(d, xerial_compatible=True), 3: kcodec.lz4_encode,
            4: kcodec.zstd_encode}[codec](zeros)
    assert decompress(codec, data, 2, limit=8 << 20) == zeros
    with pytest.raises(DecompressionBomb):
        decompress(codec, data, 2, limit=1 << 20)


def test_base_offset_bit_flip_is_quarantined(tmp_path, capsys):
    """Bit 62 of the last batch's base offset (outside Kafka's CRC) in the newest segment of a
    data topic and of __consumer_offsets: quarantined, never an offset of 4611686018427387929."""
    logs = tmp_path / "logs"
    parts = [batch([(offset_commit_key("g", "t", i), offset_commit_value(i, commit_ts=T0))] * 5,
                   base_offset=5 * i, timestamp_ms=T0)
             for i in range(5)]
    flipped = bytearray(parts[-1])
    flipped[0] ^= 0x40
    for d in ("orders-0", "__consumer_offsets-0"):
        write_segment(logs / d / segment_name(0), parts[:-1] + [bytes(flipped)])
    w = Warehouse(tmp_path / "wh")
    assert _run(["--warehouse", str(w.root), "--run-id", "r", "extract", "log-end", str(logs)], capsys)[0] == 0
    (row,) = read_arrow(w, "raw/log_end_offsets", "r").to_pylist()
    assert (row["log_start_offset"], row["log_end_offset"]) == (0, 20)
    (q,) = read_arrow(w, "raw/quarantine", "r").to_pylist()
    where = sum(map(len, parts[:-1]))
    assert q["location"] == f"{logs / 'orders-0' / segment_name(0)}:{where}"
    assert q["reason"] == (f"OffsetOutOfRange: offsets {(1 << 62) + 20}-{(1 << 62) + 24} "
                           f"outside the segment's range [0, {1 << 31})")
    assert _run(["--warehouse", str(w.root), "--run-id", "o", "extract", "offsets", str(logs)], capsys)[0] == 0
    assert read_arrow(w, "raw/offset_commits", "o")["log_offset"].to_pylist() == list(range(20))
    assert [q["location"] for q in read_arrow(w, "raw/quarantine", "o").to_pylist()] == [
        f"{logs / '__consumer_offsets-0' / segment_name(0)}:{where}"]


@pytest.mark.integration  # the CLI and its pool as processes
def test_kill_9_leaves_no_worker_behind(tmp_path):
    logs = big_offsets_dir(tmp_path / "logs", batches=KILL_BATCHES)
    try:
        p = _kaudit("--warehouse", str(tmp_path / "wh"), "extract", "offsets", str(logs), "--workers", "2")
        family: set[int] = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and p.poll() is None:
            family |= descendants(p.pid)
            if len(family) >= 2:
                break
            time.sleep(0.05)
        assert p.poll() is None and len(family) >= 2, "the pool did not start"
        time.sleep(0.1)  # mid-decode
        family |= descendants(p.pid)
        assert p.poll() is None, "finished before the kill"
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        time.sleep(2)
        survivors = [c for c in family if alive(c)]
        for c in survivors:  # do not leave them to the next test
            os.kill(c, signal.SIGKILL)
        assert not survivors
    finally:
        shutil.rmtree(logs)  # (228 MB: pytest keeps the temp dirs of its last runs)
