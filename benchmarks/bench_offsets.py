"""Benchmark: ``kaudit extract offsets`` against a straightforward kafka-python decoder.

Builds >= 5M offset-commit records with kafka-python (testkit/segments.py: 1-20
records per batch, uncompressed, 10 ``__consumer_offsets`` partitions), then, in the same run,
times

- ``kaudit extract offsets`` (the CLI as users run it, a subprocess: startup included), and
- a kafka-python decoder (``MemoryRecords`` + ``kafka.protocol`` structs per record) writing
  the same ``raw/offset_commits`` Parquet,

and prints both rates, the ratio (target >= 25x) and the 1-minute load average
before and after each side (the machine is shared: compare figures of similar load).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_offsets.py [--records 5000000] [--data DIR]

Targets: >= 25x kafka-python and >= 3.5M records/s, i.e. <= 1.43 s of wall for these 5M records
(412 MB, 10 partitions of one 41 MB segment each, 2 workers). Method and figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PARTITIONS = 10


def build(data: Path, records: int, seed: int = 7) -> int:
    """Write the segments (once per size: reused when ``data`` already holds them)."""
    from testkit.segments import (
        batch,
        offset_commit_key,
        offset_commit_value,
        segment_name,
        write_segment,
    )

    marker = data / f".built-{records}"
    if marker.exists():
        return int(marker.read_text())
    rng = random.Random(seed)
    groups = [f"consumer-group-{g:03d}" for g in range(200)]
    topics = [f"orders.events.v{t}" for t in range(20)]
    keys = {}
    per_part = records // PARTITIONS
    total = 0
    ts = 1_700_000_000_000
    for p in range(PARTITIONS):
        part = data / f"__consumer_offsets-{p}"
        offset, seg_base, batches, seg_bytes = 0, 0, [], 0
        while offset < per_part:
            n = min(rng.randint(1, 20), per_part - offset)
            recs = []
            for _ in range(n):
                k = (rng.choice(groups), rng.choice(topics), rng.randrange(32))
                key = keys.get(k) or keys.setdefault(k, offset_commit_key(*k))
                ts += 1
                recs.append((key, offset_commit_value(rng.randrange(1 << 40), commit_ts=ts, version=3)))
            b = batch(recs, base_offset=offset, timestamp_ms=ts)
            batches.append(b)
            seg_bytes += len(b)
            offset += n
            if seg_bytes > 64 << 20:  # roll segments like a broker would
                write_segment(part / segment_name(seg_base), batches)
                seg_base, batches, seg_bytes = offset, [], 0
        if batches:
            write_segment(part / segment_name(seg_base), batches)
        total += offset
    marker.write_text(str(total))
    return total


def kafka_python_decode(data: Path, out: Path) -> int:
    """The straightforward decoder: kafka-python's record reader and protocol structs."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from kafka.protocol.old.types import Int16, Int32, Int64, Schema, String
    from kafka.record.memory_records import MemoryRecords

    from pipelines.warehouse.tables import RAW_OFFSET_COMMITS

    key_schema = Schema(("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
    values = {
        0: Schema(("offset", Int64), ("metadata", String("utf-8")), ("commit_timestamp", Int64)),
        1: Schema(("offset", Int64), ("metadata", String("utf-8")), ("commit_timestamp", Int64),
                  ("expire_timestamp", Int64)),
        2: Schema(("offset", Int64), ("metadata", String("utf-8")), ("commit_timestamp", Int64)),
        3: Schema(("offset", Int64), ("leader_epoch", Int32), ("metadata", String("utf-8")),
                  ("commit_timestamp", Int64)),
    }
    out.mkdir(parents=True, exist_ok=True)
    rows = 0
    for part in sorted(data.glob("__consumer_offsets-*")):
        cols = {n: [] for n in RAW_OFFSET_COMMITS.names}
        p = int(part.name.rsplit("-", 1)[1])
        for seg in sorted(part.glob("*.log")):
            records = MemoryRecords(seg.read_bytes())
            while records.has_next():
                b = records.next_batch()
                pid = getattr(b, "producer_id", -1)
                txn = bool(getattr(b, "is_transactional", False))
                for r in b:
                    kb = BytesIO(r.key)
                    kv = Int16.decode(kb)
                    if kv not in (0, 1):
                        continue
                    group, topic, partition = key_schema.decode(kb)
                    row = dict(group_id=group, topic=topic, partition=partition, key_version=kv, offsets_partition=p,
                               log_offset=r.offset, producer_id=pid, is_transactional=txn, txn_state=None,
                               segment_file=str(seg), committed_offset=None, leader_epoch=None, metadata=None,
                               commit_timestamp=None, expire_timestamp=None, is_tombstone=r.value is None,
                               value_version=None, topic_id=None)
                    if r.value is not None:
                        vb = BytesIO(r.value)
                        vv = Int16.decode(vb)
                        fields = dict(zip(values[vv].names, values[vv].decode(vb), strict=True))
                        row.update(committed_offset=fields["offset"], metadata=fields["metadata"], value_version=vv,
                                   commit_timestamp=fields["commit_timestamp"])
                        if fields.get("leader_epoch", -1) >= 0:
                            row["leader_epoch"] = fields["leader_epoch"]
                        if fields.get("expire_timestamp", -1) >= 0:
                            row["expire_timestamp"] = fields["expire_timestamp"]
                    for k, v in row.items():
                        cols[k].append(v)
        table = pa.Table.from_pydict(cols, schema=RAW_OFFSET_COMMITS)
        pq.write_table(table, out / f"part-{p}.parquet", compression="zstd")
        rows += table.num_rows
    return rows


def _child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=5_000_000)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "kaudit-bench-offsets")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    data = args.data / str(args.records)
    data.mkdir(parents=True, exist_ok=True)

    t = time.perf_counter()
    n = build(data, args.records)
    size = sum(f.stat().st_size for f in data.rglob("*.log"))
    print(f"data: {n:,} commit records, {size / 1e6:.0f} MB in {PARTITIONS} partitions "
          f"({time.perf_counter() - t:.1f}s to build or reuse)")

    kaudit = [sys.executable, "-m", "pipelines"]
    with tempfile.TemporaryDirectory() as tmp:
        # warm the numba cache so compilation (once per install) is not timed
        warm = Path(tmp) / "warm" / "__consumer_offsets-0"
        first = sorted((data / "__consumer_offsets-0").glob("*.log"))[0]
        warm.mkdir(parents=True)
        (warm / first.name).write_bytes(first.read_bytes()[:100_000])
        subprocess.run(
            [*kaudit, "--quiet", "--warehouse", f"{tmp}/w0", "extract", "offsets", str(warm)], check=True, cwd=REPO
        )

        cmd = [*kaudit, "--quiet", "--warehouse", f"{tmp}/w1", "--run-id", "bench", "extract", "offsets", str(data)]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        load_ours = os.getloadavg()[0]
        cpu = _child_cpu()
        t = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=REPO)
        ours = time.perf_counter() - t
        cpu_ours = _child_cpu() - cpu
        load_ours = (load_ours, os.getloadavg()[0])

        from pipelines.warehouse.warehouse import Warehouse

        ours_rows = Warehouse(f"{tmp}/w1").row_count("raw/offset_commits", "bench")
        load_base = os.getloadavg()[0]
        cpu = time.process_time()
        t = time.perf_counter()
        base_rows = kafka_python_decode(data, Path(tmp) / "w2")
        base = time.perf_counter() - t
        cpu_base = time.process_time() - cpu
        load_base = (load_base, os.getloadavg()[0])
    assert ours_rows == base_rows == n, (ours_rows, base_rows, n)
    cores = os.cpu_count()
    print(f"kaudit extract offsets : {ours:8.2f}s  {n / ours / 1e6:8.2f} M records/s  "
          f"({size / ours / 1e6:.0f} MB/s, {cores} cores; load {load_ours[0]:.1f} -> {load_ours[1]:.1f})")
    print(f"kafka-python decoder   : {base:8.2f}s  {n / base / 1e6:8.2f} M records/s  "
          f"(1 process; load {load_base[0]:.1f} -> {load_base[1]:.1f})")
    print(f"ratio                  : {base / ours:8.1f}x  (target >= 25x, >= 3.5 M records/s)")
    # CPU seconds (user + sys, all processes of each side): steadier than wall time on a busy machine
    print(f"CPU seconds            : kaudit {cpu_ours:.2f}, kafka-python {cpu_base:.2f}, "
          f"ratio {cpu_base / cpu_ours:.1f}x")


if __name__ == "__main__":
    main()
