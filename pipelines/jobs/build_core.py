"""``spark-submit pipelines/jobs/build_core.py --warehouse DIR --run-id ID [--assignor G=A ...]``

The Spark part of ``kaudit build`` as a plain script for a cluster: the master is what
spark-submit set (``get_spark(None)``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make ``pipelines`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    from pipelines.context import RunContext
    from pipelines.errors import KauditError
    from pipelines.spark.build import build_core
    from pipelines.steps import parse_assignors
    from pipelines.warehouse import Warehouse

    parser = argparse.ArgumentParser(prog="build_core.py", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--assignor", action="append", default=[], metavar="GROUP=range|roundrobin")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        ctx = RunContext(Warehouse(args.warehouse), args.run_id, spark_master=None, quiet=args.quiet)
        build_core(ctx, parse_assignors(args.assignor))
    except KauditError as err:
        print(f"build_core: {err}", file=sys.stderr)
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
