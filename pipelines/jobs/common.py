"""What the ``pipelines/jobs/<step>.py`` scripts share: the ``--warehouse``/``--run-id``
arguments (and the warehouse's ``--catalog`` and
``--warehouse-local``), the :class:`~pipelines.context.RunContext` of the submitted driver (its
master is whatever spark-submit set), and kaudit's errors as one line on stderr and an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def job_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=doc.strip().splitlines()[0])
    parser.add_argument("--warehouse", required=True,
                        help="The tables' location: a directory, or an object-store or HDFS URI "
                        "(s3a://bucket/prefix).")
    parser.add_argument("--catalog", default=None, help="The Iceberg catalog's URI (default: beside the warehouse).")
    parser.add_argument("--warehouse-local", default=None,
                        help="With an object-store --warehouse: the driver's directory of run records and locks.")
    parser.add_argument("--run-id", required=True, help="The run, or 'latest' (the newest run of the warehouse).")
    parser.add_argument("--quiet", action="store_true")
    return parser


def run_job(prog: str, args: argparse.Namespace, body: Callable) -> int:
    """``body(ctx)`` for the run ``args`` name; 0, or the exit code of a kaudit error."""
    from pipelines.context import RunContext
    from pipelines.errors import KauditError
    from pipelines.warehouse.runs import choose
    from pipelines.warehouse.warehouse import open_warehouse

    try:
        warehouse = open_warehouse(args.warehouse, args.catalog, args.warehouse_local)
        run_id = choose(warehouse.root, args.run_id, "step").run_id
        body(RunContext(warehouse, run_id, spark_master=None, quiet=args.quiet))
    except KauditError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return err.exit_code
    return 0
