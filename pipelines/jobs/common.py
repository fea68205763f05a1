"""What the ``pipelines/jobs/<step>.py`` scripts share: the ``--warehouse``/``--run-id``
arguments, the :class:`~pipelines.context.RunContext` of the submitted driver (its master is
whatever spark-submit set), and kaudit's errors as one line on stderr and an exit code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def job_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=doc.strip().splitlines()[0])
    parser.add_argument("--warehouse", required=True, help="Warehouse directory every node sees.")
    parser.add_argument("--run-id", required=True, help="The run, or 'latest' (the newest run of the warehouse).")
    parser.add_argument("--quiet", action="store_true")
    return parser


def run_job(prog: str, args: argparse.Namespace, body: Callable) -> int:
    """``body(ctx)`` for the run ``args`` name; 0, or the exit code of a kaudit error."""
    from pipelines.context import RunContext
    from pipelines.errors import KauditError
    from pipelines.warehouse.directory import Warehouse
    from pipelines.warehouse.runs import choose

    try:
        warehouse = Warehouse(args.warehouse)
        run_id = choose(warehouse.root, args.run_id, "step").run_id
        body(RunContext(warehouse, run_id, spark_master=None, quiet=args.quiet))
    except KauditError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return err.exit_code
    return 0
