"""Benchmark: the fixed cost of ``kaudit build`` (Spark core tables and the dbt marts) on a tiny run.

A run of a dozen znodes (one ZooKeeper-era cluster: two topics, three groups with wrong,
unknown and missing owners) is built ``--rounds`` times in one session, the first round cold
(a new JVM's), the later ones warm, as a test suite or a notebook builds. Every round's figure
is set beside its baseline, measured in the same session just before it: the I/O floor of the
build, Spark reading each raw table of the run and writing one table per table the build
writes (the core tables and the marts, with their schemas), with the build's own writer. The
target: a warm tiny build under 15 s on an idle 2-core machine.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_build_fixed.py [--rounds 3] [--core-only]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from clocks import Clock, load
from rich.console import Console

from pipelines import steps as pipeline
from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.spark.io import read_spark
from pipelines.spark.schemas import empty
from pipelines.warehouse.tables import CORE, RAW_ZNODES
from pipelines.warehouse.warehouse import Warehouse
from testkit.znodes import znode_rows

TARGET = 15.0  # seconds: a warm tiny build, core tables and marts

TREE = {
    "/brokers/ids/1": json.dumps({"host": "b1", "port": 9092, "endpoints": ["PLAINTEXT://b1:9092"], "version": 4}),
    "/brokers/topics/orders": json.dumps({"version": 1, "partitions": {str(p): [1] for p in range(4)}}),
    "/brokers/topics/clicks": json.dumps({"version": 1, "partitions": {str(p): [1] for p in range(2)}}),
    "/consumers/g1/ids/g1_a": json.dumps({"version": 1, "subscription": {"orders": 1}, "pattern": "static"}),
    "/consumers/g1/ids/g1_b": json.dumps({"version": 1, "subscription": {"orders": 1}, "pattern": "static"}),
    "/consumers/g1/owners/orders/0": "g1_a-0",
    "/consumers/g1/owners/orders/1": "g1_b-0",
    "/consumers/g1/owners/orders/2": "ghost-0",
    "/consumers/g1/offsets/orders/0": "42",
    "/consumers/g2/ids/g2_a": json.dumps({"version": 1, "subscription": {"clicks": 2}, "pattern": "static"}),
    "/consumers/g2/owners/clicks/0": "g2_a-0",
    "/consumers/g2/owners/clicks/1": "g2_a-0",
    "/consumers/g2/offsets/clicks/1": "7",
}


def floor(ctx: RunContext, out: Path, marts: list[str]) -> None:
    """Spark reading every raw table of the run and writing one table per table the build writes."""
    spark = ctx.spark()
    for table in ("raw/znodes",):
        read_spark(spark, ctx.warehouse, table, ctx.run_id).write.mode("overwrite").parquet(str(out / table))
    for table in [*CORE, *marts]:
        empty(spark, table).write.mode("overwrite").parquet(str(out / table))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--core-only", action="store_true", help="the Spark core tables only, without dbt")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-build-fixed-") as tmp:
        root = Path(tmp)
        warehouse = Warehouse(root / "warehouse")
        marts = [] if args.core_only else sorted(
            f"marts/{p.stem}" for p in (Path(__file__).resolve().parents[1] / "models" / "marts").glob("*.sql"))
        marts = [m for m in marts if _declared(m)]
        print(f"{'round':<6} {'build s':>8} {'cpu':>6} {'floor s':>8} {'cpu':>6} {'ratio':>6} {'/target':>8}  load")
        for r in range(args.rounds):
            run = f"tiny-{r}"
            warehouse.write_table("raw/znodes", run, znode_rows(TREE, "live"), RAW_ZNODES, step="zk")
            ctx = RunContext(warehouse, run, quiet=True, console=Console(stderr=True))
            ctx.spark()
            base, step = Clock(), Clock()
            with base.timing():
                floor(ctx, root / "floor" / run, marts)
            with step.timing():
                if args.core_only:
                    build_core(ctx, {})
                else:
                    pipeline.build(ctx)
            kind = "cold" if r == 0 else "warm"
            print(f"{r:<6} {step.wall:8.1f} {step.cpu:6.1f} {base.wall:8.1f} {base.cpu:6.1f} "
                  f"{step.wall / base.wall:6.1f} {step.wall / TARGET:8.2f}  {load()} ({kind})", flush=True)


def _declared(table: str) -> bool:
    """The mart has a declared Arrow/Spark schema the floor can write (``schemas.table_schema``)."""
    from pipelines.spark.schemas import table_schema

    try:
        table_schema(table)
    except Exception:  # noqa: BLE001 - a mart without a declared schema is left out of the floor
        return False
    return True


if __name__ == "__main__":
    main()
