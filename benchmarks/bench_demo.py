"""Benchmark: ``kaudit demo`` - both runs (ZooKeeper-era cluster, and ``<run>-kraft``
beside it) in a fresh warehouse, in this process, as after an install. Prints each step's
seconds next to its target (the whole demo <= 45 s, ``build`` <= 25 s, ``validate``
<= 8 s, on an idle 2-core machine) with the ratio, and the load average before and after (the
machine is shared: compare figures only with the load they were taken at).

The demo runs the two clusters side by side, their builds in turn (the KRaft run's extracts
beside the ZooKeeper build, its build beside the ZooKeeper validation), so a step's time may
include the other run's load (the total is what a user waits); ``--after`` runs the KRaft
cluster after the ZooKeeper one, as the demo did before 0.1.11: each step's time alone.

    .venv/bin/python benchmarks/bench_demo.py [--after] [--spark-master local[2]]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console

from pipelines.context import RunContext
from pipelines.demo import run_demo
from pipelines.warehouse.directory import Warehouse

TARGETS = {"build": 25.0, "validate": 8.0, "total": 45.0}  # seconds: the targets


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark-master", default=None, help="default local[*]")
    parser.add_argument("--after", action="store_true", help="the KRaft cluster after the ZooKeeper one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        root = Path(tmp)
        ctx = RunContext(Warehouse(root / "warehouse"), "bench", spark_master=args.spark_master, quiet=True,
                         console=Console(stderr=True))
        before = load()
        started = time.monotonic()
        result = run_demo(ctx, out=root / "cluster", alongside=not args.after)
        total = time.monotonic() - started
        after = load()
    mode = "KRaft run after the ZooKeeper run" if args.after else "runs side by side, builds in turn"
    print(f"kaudit demo ({mode}): load average {before} before, {after} after")
    print(f"{'run':<6} {'step':<30} {'seconds':>8} {'target':>7} {'ratio':>6}")
    for run, timings in (("zk", result["timings"]), ("kraft", result["kraft"]["timings"])):
        for step, seconds in timings.items():
            target = TARGETS.get(step) if step != "total" else None
            ratio = f"{seconds / target:6.2f}" if target else ""
            print(f"{run:<6} {step:<30} {seconds:8.1f} {target or '':>7} {ratio}")
    print(f"{'demo':<6} {'total':<30} {total:8.1f} {TARGETS['total']:>7} {total / TARGETS['total']:6.2f}")
    if result["mismatches"] or result["kraft"]["mismatches"]:
        print("differs from the planted faults:", result["mismatches"], result["kraft"]["mismatches"])


if __name__ == "__main__":
    main()
