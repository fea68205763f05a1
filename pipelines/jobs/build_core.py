"""``spark-submit pipelines/jobs/build_core.py --warehouse DIR --run-id ID [--assignor G=A ...]
[--settle-window-ms MS] [--stuck-limit-ms MS]``

The Spark part of ``kaudit build`` as a plain script for a cluster: the master is what
spark-submit set (``get_spark(None)``)."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make ``pipelines`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> int:
    from pipelines.jobs.common import job_parser, run_job

    parser = job_parser("build_core.py", __doc__)
    parser.add_argument("--assignor", action="append", default=[], metavar="GROUP=range|roundrobin")
    parser.add_argument("--settle-window-ms", default=None, metavar="MS")
    parser.add_argument("--stuck-limit-ms", default=None, metavar="MS")
    args = parser.parse_args(argv)

    def build(ctx) -> None:
        from pipelines.settle import parse
        from pipelines.spark.build import build_core
        from pipelines.steps import parse_assignors

        build_core(ctx, parse_assignors(args.assignor), parse(args.settle_window_ms, args.stuck_limit_ms))

    return run_job("build_core.py", args, build)


if __name__ == "__main__":
    sys.exit(main())
