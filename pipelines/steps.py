"""The pipeline steps after extraction, as the CLI, the demo, ``kaudit run`` and Airflow call
them. Each step reads the run's tables from the warehouse and writes its own partition."""

from __future__ import annotations

from pathlib import Path

from pipelines.context import RunContext
from pipelines.errors import NotBuiltYet, UsageError

ASSIGNORS = ("range", "roundrobin")


def parse_assignors(values: list[str]) -> dict[str, str]:
    """``GROUP=range|roundrobin`` options -> {group: assignor}."""
    out: dict[str, str] = {}
    for value in values:
        group, sep, name = value.rpartition("=")
        if not sep or not group or name not in ASSIGNORS:
            raise UsageError(f"--assignor {value!r}: expected GROUP={'|'.join(ASSIGNORS)}")
        out[group] = name
    return out


def build(ctx: RunContext, assignors: dict[str, str] | None = None, run_dbt: bool = True) -> None:
    """Spark core tables, then ``dbt build`` of the marts and snapshots."""
    from pipelines.spark.build import build_core

    build_core(ctx, assignors or {})
    if run_dbt:
        from pipelines.transform.dbt_runner import run_dbt as dbt_build

        dbt_build(ctx)


def validate(ctx: RunContext, strict: bool = False) -> None:
    """Great Expectations suites; raises ExpectationsFailed (exit 3) with ``strict``."""
    from pipelines.quality.run import run_validation

    run_validation(ctx, strict=strict)


def report(ctx: RunContext) -> None:
    from pipelines.report.write import write_report

    write_report(ctx)


def run_config(ctx: RunContext, config: Path) -> None:
    raise NotBuiltYet("kaudit run --config")
