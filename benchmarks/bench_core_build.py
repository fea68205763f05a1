"""Benchmark: the Spark core part of ``kaudit build`` on the demo (issue 22), without dbt.

Extracts the demo's two clusters once into a fresh warehouse (run ``bench``, then
``bench-kraft``), then builds their ``core/*`` tables ``--rounds`` times in one session (the
first round cold, the later ones warm, as in ``kaudit demo`` where the KRaft run follows the
ZooKeeper one). Prints each build's wall seconds, the driver JVM's CPU seconds (steadier than
wall time on a shared machine) and the load average, and the warm rounds' ratio to the issue's
whole-``build`` target (25 s, Spark core part and dbt together).

    .venv/bin/python benchmarks/bench_core_build.py [--rounds 3] [--spark-master local[2]]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console

from pipelines import demo
from pipelines import steps as pipeline
from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.warehouse import Warehouse

TARGET = 25.0  # seconds, issue 22: the whole ``build`` on the demo


def jvm_cpu() -> float:
    """CPU seconds of this process's child JVMs (the local Spark driver), from /proc."""
    me, total = str(os.getpid()), 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if stat[1] == me and b"java" in cmd:
            total += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return total


def extracted(root: Path, master: str | None) -> tuple[RunContext, RunContext]:
    """The demo's two runs (ZooKeeper era, KRaft) extracted into a warehouse under ``root``."""
    warehouse = Warehouse(root / "warehouse")
    zk = RunContext(warehouse, "bench", spark_master=master, quiet=True, console=Console(stderr=True))
    kraft = dataclasses.replace(zk, run_id=demo.kraft_run_id(zk.run_id))
    out = demo.write_cluster(root / "cluster")
    pipeline.extract_zk_snapshot(zk, path=out / "zookeeper")
    pipeline.extract_offsets(zk, paths=[out / "kafka-logs"])
    pipeline.extract_log_end(zk, paths=[out / "kafka-logs"])
    pipeline.extract_kraft(kraft, paths=[out / demo.KRAFT / "metadata"])
    pipeline.extract_offsets(kraft, paths=[out / demo.KRAFT / "kafka-logs"])
    pipeline.extract_log_end(kraft, paths=[out / demo.KRAFT / "kafka-logs"])
    return zk, kraft


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spark-master", default=None, help="default local[*]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-core-") as tmp:
        zk, kraft = extracted(Path(tmp), args.spark_master)
        zk.spark()
        print(f"{'round':<6} {'run':<6} {'seconds':>8} {'jvm cpu':>8} {'load':>5} {'ratio':>6}")
        for r in range(args.rounds):
            for name, ctx in (("zk", zk), ("kraft", kraft)):
                cpu, started = jvm_cpu(), time.monotonic()
                build_core(ctx, {})
                seconds = time.monotonic() - started
                ratio = f"{seconds / TARGET:6.2f}" if r else "  cold"
                print(f"{r:<6} {name:<6} {seconds:8.1f} {jvm_cpu() - cpu:8.1f} {os.getloadavg()[0]:5.1f} {ratio}",
                      flush=True)


if __name__ == "__main__":
    main()
