"""Benchmark: the Spark core part of ``kaudit build`` on the demo, without dbt.

Extracts the demo's two clusters once into a fresh warehouse (run ``bench``, then
``bench-kraft``), then builds their ``core/*`` tables ``--rounds`` times in one session (the
first round cold, the later ones warm, as in ``kaudit demo`` where the KRaft run follows the
ZooKeeper one). Prints each build's wall seconds, its CPU seconds (this process and the Spark
driver JVM, ``clocks.Clock``: steadier than wall time on a shared machine) and the load
average, and the warm rounds' ratio to the issue's whole-``build`` target (25 s, Spark core
part and dbt together).

    .venv/bin/python benchmarks/bench_core_build.py [--rounds 3] [--spark-master local[2]]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from clocks import Clock
from rich.console import Console

from pipelines import demo
from pipelines import steps as pipeline
from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.warehouse.warehouse import Warehouse

TARGET = 25.0  # seconds: the target of the whole ``build`` on the demo


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
        print(f"{'round':<6} {'run':<6} {'seconds':>8} {'cpu':>8} {'load':>5} {'ratio':>6}")
        for r in range(args.rounds):
            for name, ctx in (("zk", zk), ("kraft", kraft)):
                clock = Clock()
                with clock.timing():
                    build_core(ctx, {})
                ratio = f"{clock.wall / TARGET:6.2f}" if r else "  cold"
                line = f"{r:<6} {name:<6} {clock.wall:8.1f} {clock.cpu:8.1f} {os.getloadavg()[0]:5.1f} {ratio}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
