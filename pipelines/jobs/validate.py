"""``spark-submit pipelines/jobs/validate.py --warehouse DIR --run-id ID [--strict]``

The Great Expectations suites (Spark DataFrames) inside a spark-submit driver, so they run on
the cluster the job was submitted to. Exit 3 with ``--strict`` when an error-level expectation
failed, like ``kaudit validate --strict``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make ``pipelines`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    from pipelines.jobs.common import job_parser, run_job

    parser = job_parser("validate.py", __doc__)
    parser.add_argument("--strict", action="store_true")
    args = parser.parse_args(argv)

    def validate(ctx) -> None:
        from pipelines.quality.run import run_validation

        run_validation(ctx, strict=args.strict)

    return run_job("validate.py", args, validate)


if __name__ == "__main__":
    sys.exit(main())
