"""Benchmark: ``kaudit extract kraft`` on 1M KRaft metadata records, next to two baselines
measured in the same run on the same segments:

- the plain v2 batch walk (``pipelines.kafka.batches.walk_segment``, numba): framing and
  record spans only, no value decoded - the floor of any decoder built on it;
- kafka-python's ``MemoryRecords`` iteration over the batches, touching every record's value
  (what a straightforward Python reader costs before decoding anything).

The log (generated once with the test encoder, ``testkit/kraft.py``, cached under
``benchmarks/.data/``) looks like a busy cluster's: 30 brokers, 5,000 topics of 20 partitions,
their configs, then ISR shrinks/expands and leader changes (PartitionChangeRecord, most of
the log), broker fencing, NoOps, in batches of 1-50 records, 64 MiB segments.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_kraft.py [--records 1000000] [--data DIR]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from clocks import timed

REPO = Path(__file__).resolve().parents[1]


def build(data: Path, records: int, seed: int = 11) -> int:
    """Write the metadata log (once per size: reused when ``data`` already holds it)."""
    from testkit import kraft as B

    d = data / "__cluster_metadata-0"
    marker = data / f".built-{records}"
    if marker.exists():
        return int(marker.read_text())
    rng = random.Random(seed)
    brokers = list(range(1, 31))
    values: list[bytes] = [B.feature_level("metadata.version", 21)]
    values += [B.register_broker(b, rack=f"rack-{b % 3}", fenced=False) for b in brokers]
    topics = [(f"events.stream-{t:05d}", B.topic_uuid(t)) for t in range(5000)]
    for name, tid in topics:
        values.append(B.topic(name, tid))
        for p in range(20):
            values.append(B.partition(tid, p, rng.sample(brokers, 3), version=1))
        values.append(B.config(2, name, "retention.ms", str(rng.randrange(1, 1 << 31))))
    while len(values) < records:
        r = rng.random()
        name, tid = rng.choice(topics)
        if r < 0.85:
            isr = rng.sample(brokers, rng.randint(1, 3))
            values.append(B.partition_change(tid, rng.randrange(20), isr=isr, leader=isr[0] if r < 0.3 else None))
        elif r < 0.9:
            values.append(B.broker_registration_change(rng.choice(brokers), fenced=rng.choice((-1, 1))))
        elif r < 0.95:
            values.append(B.config(2, name, "min.insync.replicas", str(rng.randint(1, 3))))
        else:
            values.append(B.no_op())
    values = values[:records]
    log, seg_base, seg_bytes = B.Log(), 0, 0
    i = 0
    log.control(B.leader_change(3000, [3000, 3001, 3002]))
    while i < len(values):
        n = rng.randint(1, 50)
        log.append(*values[i : i + n])
        i += n
        seg_bytes += len(log.batches[-1])
        if seg_bytes > 64 << 20:
            log.write(d / B.segment_name(seg_base))
            seg_base, seg_bytes, log.batches = log.next_offset, 0, []
    if log.batches:
        log.write(d / B.segment_name(seg_base))
    total = log.next_offset
    marker.write_text(str(total))
    return total


def batch_walk(d: Path) -> int:
    import numpy as np

    from pipelines.kafka.batches import walk_segment

    n = 0
    for seg in sorted(d.glob("*.log")):
        n += len(walk_segment(np.fromfile(seg, dtype=np.uint8)).records)
    return n


def kafka_python_iterate(d: Path) -> int:
    from kafka.record.memory_records import MemoryRecords

    n = 0
    for seg in sorted(d.glob("*.log")):
        records = MemoryRecords(seg.read_bytes())
        while records.has_next():
            for r in records.next_batch():
                n += r.value is not None
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--data", type=Path, default=REPO / "benchmarks" / ".data" / "kraft")
    args = ap.parse_args()
    data = args.data / str(args.records)
    t, total = timed(build, data, args.records)
    d = data / "__cluster_metadata-0"
    size = sum(f.stat().st_size for f in d.glob("*.log"))
    segments = len(list(d.glob("*.log")))
    print(f"log: {total:,} records, {size / 1e6:.0f} MB in {segments} segments ({t:.1f} s to build or find)")

    walk_s, walked = timed(batch_walk, d)
    kp_s, iterated = timed(kafka_python_iterate, d)
    assert walked == iterated == total, (walked, iterated, total)
    with tempfile.TemporaryDirectory() as wh:
        cmd = [sys.executable, "-m", "pipelines", "--warehouse", wh, "--run-id", "bench", "--quiet",
               "extract", "kraft", str(d)]
        kaudit_s, proc = timed(subprocess.run, cmd)
        if proc.returncode:
            sys.exit(f"extract kraft failed ({proc.returncode})")
    rate = total / kaudit_s
    print(f"kaudit extract kraft (CLI, decode + replay + Parquet): {kaudit_s:6.2f} s  {rate:12,.0f} records/s")
    print(f"v2 batch walk (numba, no decoding):                    {walk_s:6.2f} s  {total / walk_s:12,.0f} records/s"
          f"  -> kaudit at {walk_s / kaudit_s:.3f}x of it")
    print(f"kafka-python record iteration (no decoding):           {kp_s:6.2f} s  {total / kp_s:12,.0f} records/s"
          f"  -> kaudit at {kp_s / kaudit_s:.2f}x of it")


if __name__ == "__main__":
    main()
