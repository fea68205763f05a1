"""Batch timestamps of a data-topic partition (``raw/batch_timestamps``): kaudit's
header-only framing (``kafka/log_end.scan_partition``: the numba framing kernel with no CRC,
bodies skipped by their length) and the Arrow table of ``kafka/batch_times.batch_table``, vs
kafka-python's ``DefaultRecordBatch`` reading the same batches' headers (base offset, last
offset delta, first/max timestamp, timestamp type) one batch at a time, into the same table.

The partition: ``--batches`` magic-2 batches of ``--records`` records each in segments of
``--segment-mb``, every third one LogAppendTime; the first batch is built by kafka-python's
builder, the others are its copies with their base offset and timestamps patched and the
CRC-32C recomputed (``testkit.timestamps``).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_batch_timestamps.py [--batches N] [--records N] [--repeat R]

Each figure is the best of R runs (default 3); the ratio is kafka-python / kaudit.
"""

from __future__ import annotations

import argparse
import struct
import tempfile
from pathlib import Path

import crc32c
import numpy as np
import pyarrow as pa
from clocks import best

from pipelines.kafka.batch_times import batch_table
from pipelines.kafka.log_end import scan_partition
from pipelines.warehouse.tables import RAW_BATCH_TIMESTAMPS
from testkit.timestamps import v2_batch

T0 = 1_704_103_200_000


def build(d: Path, batches: int, records: int, segment_mb: int) -> int:
    d.mkdir(parents=True)
    template = bytearray(v2_batch(list(range(records)), [T0] * records, base_offset=0))
    lat = bytearray(v2_batch(list(range(records)), [T0] * records, base_offset=0, log_append_time=T0))
    seg, size, base, total = [], 0, 0, 0
    for k in range(batches):
        buf = bytearray(lat if k % 3 == 2 else template)
        struct.pack_into(">q", buf, 0, k * records)
        struct.pack_into(">qq", buf, 27, T0 + k, T0 + k + records)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
        seg.append(bytes(buf))
        size += len(buf)
        if size >= segment_mb << 20 or k == batches - 1:
            (d / f"{base:020d}.log").write_bytes(b"".join(seg))
            total += size
            seg, size, base = [], 0, (k + 1) * records
    return total


def kaudit(d: Path) -> pa.Table:
    ends = scan_partition("t", 0, d)
    return pa.concat_tables([batch_table("t", 0, h) for h in ends.headers])


def kafka_python(d: Path) -> pa.Table:
    from kafka.record.default_records import DefaultRecordBatch

    cols = {n: [] for n in ("seg", "pos", "size", "base", "last", "lat", "first", "max")}
    for f in sorted(d.glob("*.log")):
        data = memoryview(f.read_bytes())
        seg_base = int(f.name[:-4])
        pos = 0
        while pos + 12 <= len(data):
            size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
            b = DefaultRecordBatch(data[pos:pos + size])
            lat = b.timestamp_type == 1
            cols["seg"].append(seg_base)
            cols["pos"].append(pos)
            cols["size"].append(size)
            cols["base"].append(b.base_offset)
            cols["last"].append(b.base_offset + b.last_offset_delta)
            cols["lat"].append(lat)
            cols["first"].append(b.max_timestamp if lat else b.first_timestamp)
            cols["max"].append(b.max_timestamp)
            pos += size
    n = len(cols["base"])
    ts = pa.timestamp("ms", tz="UTC")
    return pa.Table.from_arrays([
        pa.array(["t"] * n), pa.array(np.zeros(n, np.int32)), pa.array(cols["seg"], pa.int64()),
        pa.array(cols["pos"], pa.int64()), pa.array(cols["size"], pa.int64()), pa.array(np.full(n, 2, np.int8)),
        pa.array(cols["base"], pa.int64()), pa.array(cols["last"], pa.int64()), pa.nulls(n, pa.int32()),
        pa.array(np.zeros(n, bool)), pa.array(["LogAppendTime" if x else "CreateTime" for x in cols["lat"]]),
        pa.array(cols["first"], pa.int64()).cast(ts), pa.array(cols["max"], pa.int64()).cast(ts),
    ], schema=RAW_BATCH_TIMESTAMPS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=300_000)
    ap.add_argument("--records", type=int, default=10)
    ap.add_argument("--segment-mb", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "t-0"
        size = build(d, a.batches, a.records, a.segment_mb)
        segments = len(list(d.glob("*.log")))
        kaudit(d)  # numba compile / cache load outside the timing
        tk, ours = best(lambda: kaudit(d), a.repeat)
        tp, theirs = best(lambda: kafka_python(d), a.repeat)
    same = ["segment_base_offset", "position", "size_bytes", "base_offset", "last_offset", "timestamp_type",
            "first_timestamp", "max_timestamp"]
    assert ours.select(same).equals(theirs.select(same)), "kaudit and kafka-python disagree"
    print(f"batch timestamps: {a.batches:,} batches x {a.records} records, {size / 1e6:.1f} MB in "
          f"{segments} segments")
    print(f"  kaudit (numba headers-only framing + Arrow)  {tk:8.3f} s  {a.batches / tk / 1e6:6.2f} M batches/s")
    print(f"  kafka-python DefaultRecordBatch headers      {tp:8.3f} s  {a.batches / tp / 1e6:6.2f} M batches/s")
    print(f"  ratio kafka-python / kaudit: {tp / tk:.1f}x")


if __name__ == "__main__":
    main()
