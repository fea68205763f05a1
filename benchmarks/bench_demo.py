"""Benchmark: ``kaudit demo`` - the ZooKeeper-era run, the KRaft run (``<run>-kraft``) and the
real brokers' estate - in a fresh warehouse, each demo in a fresh process as after an install
(its own Spark JVM), ``--rounds`` times; the figures are each step's median.

Each step's wall seconds and CPU seconds (the demo's process and its children: the Spark
JVM, ``clocks.Clock``) are printed with the totals, the targets (the whole demo
<= 45 s, ``build`` <= 25 s, ``validate`` <= 8 s on an idle 2-core machine) and the load
average before and after each demo. CPU time is the figure to compare on a shared machine:
wall time follows the load.

The demo runs the two clusters side by side, their builds in turn (the KRaft run's extracts
beside the ZooKeeper build, its build beside the ZooKeeper validation), so a step's time and
CPU then include the other run's work (the totals are exact: what a user waits, what the
machine spent); ``--after`` runs the KRaft cluster after the ZooKeeper one: each step alone.

    .venv/bin/python benchmarks/bench_demo.py [--rounds 1] [--after]
        [--spark-master local[2]]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clocks import Clock, load

TARGETS = {"build": 25.0, "validate": 8.0, "total": 45.0}  # seconds: the targets
RESULT = "bench-demo-result: "  # the prefix of the child's line of figures


def group(labels: list[str]) -> str:
    """Which run a list of step labels is: the ZooKeeper run, the KRaft run or the estate."""
    return "zk" if labels[0] == "extract zk-snapshot" else "kraft" if labels[0] == "extract kraft" else "estate"


def child(after: bool, master: str | None) -> None:
    """One demo in this process on a fresh warehouse; prints its figures as one JSON line."""
    from rich.console import Console

    from pipelines import demo
    from pipelines.context import RunContext
    from pipelines.warehouse.warehouse import open_warehouse

    steps: dict[str, list] = {}  # run -> [(step, wall, cpu)]
    timed = demo.timed

    def clocked(plan, stop=None, say=None):
        """``demo.timed`` with each step's CPU seconds beside its wall seconds."""
        rows = steps.setdefault(group([label for label, _ in plan]), [])

        def step_clocked(label, fn):
            def run():
                clock = Clock()
                with clock.timing():
                    fn()
                rows.append((label, clock.wall, clock.cpu))
            return run

        return timed([(label, step_clocked(label, fn)) for label, fn in plan], stop, say)

    demo.timed = clocked
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        root = Path(tmp)
        ctx = RunContext(open_warehouse(root / "warehouse"), "bench", spark_master=master, quiet=True,
                         console=Console(stderr=True))
        total, before = Clock(), load()
        with total.timing():
            result = demo.run_demo(ctx, out=root / "cluster", alongside=not after)
        after_load = load()
    mismatches = [*result["mismatches"], *result["kraft"]["mismatches"],
                  *(m for case in result["real"].values() for m in case.get("mismatches", []))]
    print(RESULT + json.dumps({"steps": steps, "wall": total.wall, "cpu": total.cpu,
                               "load": [before, after_load], "mismatches": mismatches}), flush=True)


def one(after: bool, master: str | None) -> dict:
    """The figures of one demo run by a child process of this script."""
    cmd = [sys.executable, __file__, "--child", *(["--after"] if after else []),
           *(["--spark-master", master] if master else [])]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith(RESULT))
    return json.loads(line[len(RESULT):])


def table(results: list[dict]) -> None:
    """Each step's median wall and CPU seconds over the rounds, and the targets."""
    keys: list[tuple[str, str]] = []
    for res in results:
        for run, rows in res["steps"].items():
            keys += [(run, label) for label, _, _ in rows if (run, label) not in keys]

    def med(run: str, label: str, what: int) -> float | None:
        vals = [row[what] for res in results for row in res["steps"].get(run, []) if row[0] == label]
        return statistics.median(vals) if vals else None

    print(f"{'run':<7} {'step':<30} {'wall s':>8} {'cpu s':>7} {'target':>7}")
    lines = [(run, label, med(run, label, 1), med(run, label, 2)) for run, label in keys]
    lines.append(("demo", "total", statistics.median(r["wall"] for r in results),
                  statistics.median(r["cpu"] for r in results)))
    for run, label, wall, cpu in lines:
        target = TARGETS.get(label) if run in ("zk", "demo") else None
        print(f"{run:<7} {label:<30} {wall:8.1f} {cpu:7.1f}" + (f" {target:7.0f}" if target else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="demos, each in a fresh process")
    parser.add_argument("--spark-master", default=None, help="default local[*]")
    parser.add_argument("--after", action="store_true", help="the KRaft cluster after the ZooKeeper one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.after, args.spark_master)
        return
    mode = "KRaft run after the ZooKeeper run" if args.after else "runs side by side, builds in turn"
    print(f"kaudit demo ({mode}), {args.rounds} round(s), {os.cpu_count()} cores")
    results: list[dict] = []
    for r in range(1, args.rounds + 1):
        started = time.monotonic()
        res = one(args.after, args.spark_master)
        results.append(res)
        print(f"round {r} wall {res['wall']:6.1f} s  cpu {res['cpu']:6.1f} s  "
              f"({time.monotonic() - started:.0f} s with the process's start) {res['load'][0]} before, "
              f"{res['load'][1]} after" + (f"  MISMATCHES {res['mismatches']}" if res["mismatches"] else ""),
              flush=True)
    table(results)


if __name__ == "__main__":
    main()
