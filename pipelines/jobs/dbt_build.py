"""``spark-submit pipelines/jobs/dbt_build.py --warehouse DIR --run-id ID``

The dbt build of the marts and snapshots (dbt-spark ``method: session``) inside a spark-submit
driver, so its SQL runs on the cluster the job was submitted to. Cluster mode of ``kaudit build``
submits it after ``build_core.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make ``pipelines`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dbt_build.py", description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True, help="Warehouse directory every node sees.")
    parser.add_argument("--run-id", required=True)
    args = parser.parse_args(argv)

    from pipelines.context import RunContext
    from pipelines.errors import KauditError
    from pipelines.warehouse import Warehouse

    ctx = RunContext(warehouse=Warehouse(args.warehouse), run_id=args.run_id, spark_master=None)
    try:
        from pipelines.spark.session import get_spark
        from pipelines.transform.dbt_runner import run_dbt

        get_spark(None)  # the session spark-submit configured; dbt-spark's getOrCreate() reuses it
        run_dbt(ctx)
    except KauditError as err:
        print(f"kaudit: {err}", file=sys.stderr)
        return err.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
