"""``raw/batch_timestamps`` and ``raw/log_start_checkpoints`` of ``extract log-end``: batches
built by kafka-python with known create times, a LogAppendTime batch, a compacted batch and a
compacted gap, a transaction marker, magic-1 messages, ``.timeindex`` files beside the segments.
Expected rows come from what the test wrote."""

from __future__ import annotations

import datetime as dt

from pipelines.context import RunContext
from pipelines.kafka.batch_times import read_checkpoint
from pipelines.kafka.extract import extract_log_end
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.segments import batch, control_batch, write_segment
from testkit.timestamps import v2_batch, write_partition


def _t(ms):
    return None if ms is None else dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


# (present offsets, create times, base, last, LogAppendTime) per batch, two segments
ORDERS = [
    [
        ([0, 1, 2], [1000, 1500, 1200], 0, 2, None),
        ([3, 4], [2000, 2100], 3, 4, None),
        ([7, 8], [3000, 3100], 5, 8, None),  # compacted: 5 and 6 removed, base offset kept
        ([12, 13], [4000, 4100], 12, 13, None),  # 9-11 removed with their whole batch
    ],
    [
        ([14, 15, 16], [10, 20, 30], 14, 16, 5000),  # LogAppendTime: every record's timestamp is 5000
        "marker",  # offset 17, a COMMIT marker
        ([18, 19], [6000, 6200], 18, 19, None),
    ],
]


def _orders(root):
    segments, expected = [], []
    for seg in ORDERS:
        batches = []
        for b in seg:
            if b == "marker":
                batches.append(control_batch(base_offset=17, producer_id=9, producer_epoch=0, commit=True,
                                             timestamp_ms=5100))
                expected.append((17, 17, True, "CreateTime", 5100, 5100))
                continue
            offsets, times, base, last, lat = b
            batches.append(v2_batch(offsets, times, base_offset=base, last_offset=last, log_append_time=lat))
            if lat is None:
                expected.append((base, last, False, "CreateTime", times[0], max(times)))
            else:
                expected.append((base, last, False, "LogAppendTime", lat, lat))
        segments.append(batches)
    write_partition(root / "orders-0", segments)
    return expected


def _read(wh, table):
    return read_arrow(wh, table, "r1", with_run_id=False).to_pylist()


def test_batch_timestamps_of_every_kind(tmp_path):
    logs = tmp_path / "logs"
    expected = _orders(logs)
    # magic 1: an uncompressed message at 0 (its own timestamp), then a gzip wrapper of 1-3
    # under CreateTime (first timestamp unknown without decompressing; max = the wrapper's)
    write_segment(logs / "legacy-0" / f"{0:020d}.log", [
        batch([(b"k", b"v")], base_offset=0, magic=1, timestamp_ms=700),
        batch([(b"k", b"v")] * 3, base_offset=1, magic=1, codec="gzip", timestamp_ms=0, timestamps=[800, 900, 850]),
    ])
    (logs / "log-start-offset-checkpoint").write_text("0\n2\norders 0 3\nlegacy 0 0\n")
    wh = Warehouse(tmp_path / "wh")
    extract_log_end(RunContext(wh, "r1", quiet=True), [logs], None)

    rows = _read(wh, "raw/batch_timestamps")
    orders = sorted((r for r in rows if r["topic"] == "orders"), key=lambda r: r["base_offset"])
    got = [(r["base_offset"], r["last_offset"], r["is_control"], r["timestamp_type"], r["first_timestamp"],
            r["max_timestamp"]) for r in orders]
    assert got == [(b, e, c, tt, _t(f), _t(m)) for b, e, c, tt, f, m in expected]
    assert [r["segment_base_offset"] for r in orders] == [0, 0, 0, 0, 14, 14, 14]
    sizes = {s: sum(r["size_bytes"] for r in orders if r["segment_base_offset"] == s) for s in (0, 14)}
    assert sizes == {s: (logs / "orders-0" / f"{s:020d}.log").stat().st_size for s in (0, 14)}
    assert [r["record_count"] for r in orders] == [3, 2, 2, 2, 3, 1, 2]

    legacy = sorted((r for r in rows if r["topic"] == "legacy"), key=lambda r: r["base_offset"])
    assert [(r["magic"], r["base_offset"], r["last_offset"], r["record_count"], r["timestamp_type"],
             r["first_timestamp"], r["max_timestamp"]) for r in legacy] == [
        (1, 0, 0, 1, "CreateTime", _t(700), _t(700)),
        (1, 1, 3, None, "CreateTime", None, _t(900)),
    ]
    # the log-end table keeps its contract
    ends = {r["topic"]: r for r in _read(wh, "raw/log_end_offsets")}
    assert (ends["orders"]["log_start_offset"], ends["orders"]["log_end_offset"]) == (0, 20)
    assert ends["orders"]["max_timestamp"] == _t(6200)
    checkpoints = sorted(_read(wh, "raw/log_start_checkpoints"), key=lambda r: r["topic"])
    assert [(r["topic"], r["partition"], r["log_start_offset"]) for r in checkpoints] == [("legacy", 0, 0),
                                                                                          ("orders", 0, 3)]


def test_checkpoint_lines_that_cannot_be_read(tmp_path):
    f = tmp_path / "log-start-offset-checkpoint"
    f.write_text("0\n3\norders 0 3\norders x 4\n")
    found, bad = read_checkpoint(f)
    assert found == [("orders", 0, 3)]
    assert [loc for loc, _ in bad] == [f"{f}:4", f"{f}:2"]
    f.write_text("1\n0\n")
    assert read_checkpoint(f) == ([], [(f"{f}:1", "CheckpointError: expected version 0 and an entry count on the "
                                                  "first two lines")])
