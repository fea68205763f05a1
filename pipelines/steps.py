"""The pipeline steps after extraction, as the CLI, the demo, ``kaudit run`` and Airflow call
them. Each step reads the run's tables from the warehouse and writes its own partition."""

from __future__ import annotations

from pathlib import Path

from pipelines.context import RunContext
from pipelines.errors import UsageError
from pipelines.tables import ZOOKEEPER_ASSIGNORS as ASSIGNORS


def parse_assignors(values: list[str]) -> dict[str, str]:
    """``GROUP=range|roundrobin`` options -> {group: assignor}."""
    out: dict[str, str] = {}
    for value in values:
        group, sep, name = value.rpartition("=")
        if not sep or not group or name not in ASSIGNORS:
            raise UsageError(f"--assignor {value!r}: expected GROUP={'|'.join(ASSIGNORS)}")
        out[group] = name
    return out


def build(
    ctx: RunContext,
    assignors: dict[str, str] | None = None,
    run_dbt: bool = True,
    spark_conf: dict[str, str] | None = None,
    submit: bool | None = None,
) -> None:
    """Spark core tables, then ``dbt build`` of the marts and snapshots.

    With a non-local master (``spark://``, ``yarn``, ``k8s://``) each Spark step runs as
    ``spark-submit pipelines/jobs/<step>.py`` with the package shipped (``pipelines.cluster``)."""
    from pipelines import cluster

    if cluster.submits(ctx, submit):
        args = [f"--assignor={g}={a}" for g, a in sorted((assignors or {}).items())]
        cluster.submit_job(ctx, "build_core", args, spark_conf)
        if run_dbt:
            cluster.submit_job(ctx, "dbt_build", [], spark_conf)
        return
    if spark_conf:
        from pipelines.spark.session import get_spark

        get_spark(ctx.spark_master, conf=spark_conf)  # build_core's get_spark reuses this session
    from pipelines.spark.build import build_core

    build_core(ctx, assignors or {})
    if run_dbt:
        from pipelines.transform.dbt_runner import run_dbt as dbt_build

        dbt_build(ctx)


def validate(ctx: RunContext, strict: bool = False) -> None:
    """Great Expectations suites; raises ExpectationsFailed (exit 3) with ``strict``."""
    from pipelines import cluster

    if cluster.submits(ctx):
        cluster.submit_job(ctx, "validate", ["--strict"] if strict else [])
        return
    from pipelines.quality.run import run_validation

    run_validation(ctx, strict=strict)


def report(ctx: RunContext) -> None:
    from pipelines.report.write import write_report

    write_report(ctx)


def run_config(
    ctx: RunContext,
    config: Path,
    only: list[str] | None = None,
    show_plan: bool = False,
    explicit: frozenset[str] = frozenset(),
) -> None:
    """Every unit of ``config``'s plan (or the ``only`` ones), in order. ``explicit`` names the
    global options given on the command line: they win over the config's values."""
    from pipelines.config import (
        load_config,
        plan,
        plan_json,
        run_context,
        run_unit,
        select,
    )

    cfg = load_config(config)
    ctx = run_context(cfg, ctx, explicit)
    units = select(plan(cfg), only or [])
    if show_plan:
        print(plan_json(cfg, ctx, units))
        return
    ctx.say(f"run {ctx.run_id}: {', '.join(units)}")
    for unit in units:
        run_unit(cfg, ctx, unit)
