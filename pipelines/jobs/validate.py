"""``spark-submit pipelines/jobs/validate.py --warehouse DIR --run-id ID [--strict]``

The Great Expectations suites (Spark DataFrames) inside a spark-submit driver, so they run on
the cluster the job was submitted to. Exit 3 with ``--strict`` when an error-level expectation
failed, like ``kaudit validate --strict``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make ``pipelines`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="validate.py", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True, help="Warehouse directory every node sees.")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args(argv)

    from pipelines.context import RunContext
    from pipelines.errors import KauditError
    from pipelines.warehouse import Warehouse

    ctx = RunContext(warehouse=Warehouse(args.warehouse), run_id=args.run_id, spark_master=None)
    try:
        from pipelines.quality.run import run_validation

        run_validation(ctx, strict=args.strict)
    except KauditError as err:
        print(f"kaudit: {err}", file=sys.stderr)
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
