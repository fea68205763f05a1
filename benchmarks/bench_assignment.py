"""Benchmark: registry + expected assignment + audit (``build_core``) over >= 10M partition
rows on local[2], against the I/O floor, in one run. Prints both times and their ratio
(target <= 2x).

The I/O floor is Spark doing the build's I/O with no logic: reading the columns the build
reads from ``raw/znodes`` (path, data, mtime) and writing every row the build wrote (each
``core/*`` table, held in memory first, written as zstd Parquet files: ``write_parquet``). Both
sides are the median of ``--repeat`` runs in one JVM (the first run of either is the JVM's
first sight of its code: the JIT compiles it while it runs). The sessions before 0.1.4 used
a narrower floor, a copy of ``raw/znodes`` (10.4M rows read and written once, while the
build writes 30M); it is still printed, for comparison.

    .venv/bin/python benchmarks/bench_assignment.py                 # small (dev): 2k x 100
    .venv/bin/python benchmarks/bench_assignment.py --groups 100000 # full: 10M owner znodes

The cluster: ``groups`` ZooKeeper consumer groups of ``consumers`` one-stream consumers, each
group reading one of ``groups / 100`` topics of ``partitions`` partitions (0.8+ layout), an
owner znode per partition (1% planted wrong owners). Rows are generated with Arrow compute
(no per-row Python) and written in chunks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from clocks import Clock, load, median, ratio, runs
from pyspark import StorageLevel

from pipelines.context import RunContext
from pipelines.spark.io import read_spark
from pipelines.warehouse.tables import CORE, RAW_ZNODES
from pipelines.warehouse.warehouse import Warehouse

T0 = datetime(2024, 1, 1, tzinfo=UTC)
RUN = "bench"


def _s(values) -> pa.Array:
    return pa.array(values).cast(pa.string())


def _table(paths: pa.Array, data: pa.Array) -> pa.Table:
    n = len(paths)
    zeros64 = pa.array(np.zeros(n, dtype=np.int64))
    zeros32 = pa.array(np.zeros(n, dtype=np.int32))
    ts = pa.array(np.full(n, int(T0.timestamp() * 1000), dtype=np.int64)).cast(pa.timestamp("ms", tz="UTC"))
    cols = {
        "source": pa.array(np.full(n, "live", dtype=object), pa.string()),
        "path": paths,
        "data": data.cast(pa.binary()),
        "czxid": zeros64,
        "mzxid": zeros64,
        "pzxid": zeros64,
        "ctime": ts,
        "mtime": ts,
        "version": zeros32,
        "cversion": zeros32,
        "aversion": zeros32,
        "ephemeral_owner": zeros64,
        "data_length": pc.binary_length(data.cast(pa.binary())).cast(pa.int32()),
        "num_children": zeros32,
    }
    return pa.table(cols, schema=RAW_ZNODES)


def generate(warehouse: Warehouse, groups: int, partitions: int, consumers: int, chunk: int = 1_000_000) -> int:
    topics = max(1, groups // 100)
    rows = 0
    with warehouse.transaction(RUN, step="zk") as tx:
        w = tx.writer("raw/znodes")
        # topics (0.8+ JSON)
        value = json.dumps({"version": 1, "partitions": {str(p): [1] for p in range(partitions)}})
        t = np.arange(topics)
        w.write(_table(pc.binary_join_element_wise("/brokers/topics/t", _s(t), ""), pa.array([value] * topics)))
        w.write(_table(pa.array(["/brokers/ids/1"]), pa.array([json.dumps({"host": "b1", "port": 9092})])))
        # registrations: consumers per group, one stream each
        g = np.repeat(np.arange(groups), consumers)
        c = np.tile(np.arange(consumers), groups)
        cid = pc.binary_join_element_wise("g", _s(g), "_c", _s(c), "")
        reg = pc.binary_join_element_wise(
            '{"version":1,"pattern":"static","subscription":{"t', _s(g % topics), '":1}}', ""
        )
        w.write(_table(pc.binary_join_element_wise("/consumers/g", _s(g), "/ids/", cid, ""), reg))
        # owners: the range owner, 1% planted wrong owners
        per, extra = divmod(partitions, consumers)
        total = groups * partitions
        rng = np.random.default_rng(7)
        for start in range(0, total, chunk):
            i = np.arange(start, min(total, start + chunk))
            gi, p = i // partitions, i % partitions
            cut = extra * (per + 1)
            owner = np.where(p < cut, p // (per + 1), extra + (p - cut) // max(per, 1))
            wrong = rng.random(len(i)) < 0.01
            owner = np.where(wrong, (owner + 1) % consumers, owner)
            paths = pc.binary_join_element_wise("/consumers/g", _s(gi), "/owners/t", _s(gi % topics), "/", _s(p), "")
            data = pc.binary_join_element_wise("g", _s(gi), "_c", _s(owner), "-0", "")
            w.write(_table(paths, data))
        rows = w.rows
    return rows


def write_parquet(df, path: Path) -> None:
    """The floor's write: ``df`` as zstd Parquet files in ``path``."""
    df.write.mode("overwrite").option("compression", "zstd").parquet(str(path))


def io_floor(spark, warehouse: Warehouse, out: Path) -> Clock:
    """One run of the I/O floor (see the module docstring)."""
    clock = Clock()
    with clock.timing():
        znodes = read_spark(spark, warehouse, "raw/znodes", RUN)
        znodes.select("path", "data", "mtime").write.format("noop").mode("overwrite").save()
    for table in CORE:
        rows = read_spark(spark, warehouse, table, RUN, with_run_id=False).persist(StorageLevel.MEMORY_AND_DISK)
        rows.count()
        with clock.timing():
            write_parquet(rows, out / table)
        rows.unpersist()
    return clock


def input_copy(spark, warehouse: Warehouse, out: Path) -> Clock:
    """One copy of ``raw/znodes`` (the floor before 0.1.4)."""
    clock = Clock()
    with clock.timing():
        write_parquet(read_spark(spark, warehouse, "raw/znodes", RUN, with_run_id=False), out)
    return clock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=2_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument(
        "--java-options", default=None, help="the driver JVM's options (default: kaudit's, see pipelines.spark.session)"
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs of the build and of the floor (medians are compared)")
    ap.add_argument("--dir", default=None, help="work dir (default: a temp dir, removed afterwards)")
    args = ap.parse_args()

    work = Path(args.dir or tempfile.mkdtemp(prefix="kaudit-bench-"))
    wh = Warehouse(work / "warehouse")
    try:
        t = time.perf_counter()
        rows = generate(wh, args.groups, args.partitions, args.consumers)
        print(f"generated {rows:,} znodes ({args.groups:,} groups x {args.partitions} partitions) "
              f"in {time.perf_counter() - t:.1f}s")

        from pipelines.spark.build import build_core
        from pipelines.spark.session import get_spark

        spark = get_spark(args.master, app_name="kaudit-bench", conf={
            "spark.driver.memory": args.driver_memory,
            **({"spark.driver.extraJavaOptions": args.java_options} if args.java_options else {}),
        })
        ctx = RunContext(wh, RUN, spark_master=args.master, quiet=True)
        builds, floors, copies = [], [], []
        for _ in range(args.repeat):  # interleaved, so drift in the machine's speed hits both
            builds.append(Clock())
            with builds[-1].timing():
                counts = build_core(ctx, {})
            floors.append(io_floor(spark, wh, work / "floor"))
            copies.append(input_copy(spark, wh, work / "copy"))
        written = sum(counts[t] for t in CORE)
        build = median(builds)
        print(f"build_core (registry + assignment + audit): {runs(builds)}  ({rows / build:,.0f} znodes/s, "
              f"{counts['core/assignment_audit']:,} audit rows)")
        print(f"I/O floor (read {rows:,} znodes, write the {written:,} core rows, no logic): {runs(floors)}")
        print(f"input copy (read + write {rows:,} znodes, the floor before 0.1.4): {runs(copies)}; "
              f"build / copy {build / median(copies):.2f}x")
        statuses = read_spark(spark, wh, "core/assignment_audit", RUN).groupBy("status").count()
        print("statuses:", {r["status"]: r["count"] for r in statuses.collect()})
        print(f"build / I/O floor: {ratio(builds, floors)}; target <= 2x ({load()})")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
