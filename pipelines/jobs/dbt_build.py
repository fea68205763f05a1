"""``spark-submit pipelines/jobs/dbt_build.py --warehouse DIR --run-id ID [--target TARGET]``

The dbt build of the marts and snapshots (dbt-spark ``method: session``) inside a spark-submit
driver, so its SQL runs on the cluster the job was submitted to. Cluster mode of ``kaudit build``
submits it after ``build_core.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make ``pipelines`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    from pipelines.jobs.common import job_parser, run_job

    parser = job_parser("dbt_build.py", __doc__)
    parser.add_argument("--target", default=None, help="profiles.yml target (default: session).")
    args = parser.parse_args(argv)

    def build(ctx) -> None:
        from pipelines.spark.session import get_spark
        from pipelines.transform.dbt_runner import run_dbt

        get_spark(None)  # the session spark-submit configured; dbt-spark's getOrCreate() reuses it
        run_dbt(ctx, target=args.target)

    return run_job("dbt_build.py", args, build)


if __name__ == "__main__":
    sys.exit(main())
