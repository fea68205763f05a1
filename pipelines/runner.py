"""``kaudit run --config FILE``: a loaded config (:mod:`pipelines.config`) as a *plan* of units,
and each unit dispatched to its step (:mod:`pipelines.steps`).

The plan is an ordered list of units: one per configured source to extract, then ``build``,
``dbt``, ``validate``, ``report``. ``kaudit run`` executes them in order; the Airflow DAG reads
the plan (``--plan``) and runs each unit as a task (extract units in parallel).
"""

from __future__ import annotations

import json
from pathlib import Path

from pipelines import cluster, steps
from pipelines.config import AuditConfig, ZkLive, ZkTls, load_config
from pipelines.context import RunContext
from pipelines.errors import UsageError
from pipelines.warehouse.runs import Choice, choose
from pipelines.warehouse.warehouse import Warehouse


def plan(cfg: AuditConfig) -> list[str]:
    """The units ``kaudit run`` executes, in order: extract units first (independent of each
    other, the DAG runs them in parallel), then ``build`` (Spark core), ``dbt``, ``validate``,
    ``report``."""
    units: list[str] = []
    if "extract" in cfg.steps:
        units += [f"extract:zookeeper[{i}]" for i in range(len(cfg.sources.zookeeper))]
        k = cfg.sources.kafka
        if k.log_dirs or k.consumer_offsets:
            units.append("extract:offsets")
        if k.log_dirs or k.offsets_file is not None or k.topic_configs is not None:
            units.append("extract:log-end")
        if cfg.sources.kraft.paths:
            units.append("extract:kraft")
        for alias, c in cfg.clusters.items():  # the run's other clusters (docs/clusters.md)
            if c.kafka.log_dirs or c.kafka.consumer_offsets:
                units.append(f"extract:{alias}:offsets")
            if c.mirror_maker:
                units.append(f"extract:{alias}:mm2")
    units += [s for s in cfg.steps if s != "extract"]
    return units


def select(units: list[str], only: list[str]) -> list[str]:
    """``units`` named by ``only`` (a unit, or a step name selecting all its units)."""
    if not only:
        return units
    known = set(units) | {u.split(":", 1)[0] for u in units}
    for o in only:
        if o not in known:
            raise UsageError(f"--only {o!r}: not a unit of this config (units: {', '.join(units)})")
    return [u for u in units if u in only or u.split(":", 1)[0] in only]


def run_context(cfg: AuditConfig, base, explicit: frozenset[str] = frozenset()) -> tuple[RunContext, Choice]:
    """The run's context: ``base``'s options (the command line's; ``run_id`` may be None or
    ``latest``) with the config's warehouse, run id and Spark master, except where the command
    line gave them (``explicit``), and the config's Spark conf, spark-submit choice and dbt target
    (else ``base``'s); the run chosen as :mod:`pipelines.warehouse.runs` says for ``run``: the one named,
    else a new one."""
    warehouse = base.warehouse
    if cfg.warehouse is not None and "warehouse" not in explicit:
        warehouse = Warehouse(cfg.warehouse)
    run_id = base.run_id
    if cfg.run_id is not None and "run_id" not in explicit:
        run_id = cfg.run_id
    master = base.spark_master
    if cfg.spark.master is not None and "spark_master" not in explicit:
        master = cfg.spark.master
    choice = choose(warehouse.root, run_id, "new")
    ctx = RunContext(
        warehouse,
        choice.run_id,
        spark_master=master,
        quiet=base.quiet,
        verbose=base.verbose,
        spark_conf=dict(cfg.spark.conf),
        spark_submit=cfg.spark.submit,
        dbt_target=cfg.dbt.target or base.dbt_target,
    )
    return ctx, choice


def plan_json(cfg: AuditConfig, ctx: RunContext, units: list[str]) -> str:
    """The plan as JSON, for the Airflow DAG: units, and how to spark-submit the Spark ones."""

    def job(step: str, args: list[str]) -> dict:
        application, *application_args = cluster.job_command(ctx, step, args)
        return {"application": application, "application_args": application_args}

    return json.dumps(
        {
            "run_id": ctx.run_id,
            "warehouse": str(ctx.warehouse.root),
            "spark_master": ctx.spark_master,
            "spark_conf": {**cluster.warehouse_conf(ctx.warehouse), **ctx.spark_conf},
            "units": units,
            "extract_units": [u for u in units if u.startswith("extract:")],
            "spark_jobs": {
                "build": job("build_core", [*steps.assignor_args(cfg.assignors), *cfg.history.rule.args()]),
                "dbt": job("dbt_build", steps.dbt_job_args(ctx)),
            },
            "strict": cfg.strict,
        },
        indent=2,
    )


def run_unit(cfg: AuditConfig, ctx: RunContext, unit: str) -> None:
    """Run one unit of the plan (see :func:`plan`)."""
    k = cfg.sources.kafka
    if unit.startswith("extract:zookeeper["):
        z = cfg.sources.zookeeper[int(unit[len("extract:zookeeper[") : -1])]
        if isinstance(z, ZkLive):
            tls = z.tls or ZkTls()
            steps.extract_zk(
                ctx, hosts=z.hosts, chroot=z.chroot, auth=z.auth,
                tls=z.tls is not None, ca=tls.ca, cert=tls.cert, key=tls.key,
            )
        else:
            steps.extract_zk_snapshot(ctx, path=z.data_dir, at_zxid=z.at_zxid)
    elif unit == "extract:offsets":
        steps.extract_offsets(ctx, paths=[*k.log_dirs, *k.consumer_offsets], workers=k.workers)
    elif unit == "extract:log-end":
        steps.extract_log_end(ctx, paths=list(k.log_dirs), offsets_file=k.offsets_file,
                              topic_configs=k.topic_configs)
    elif unit == "extract:kraft":
        from pipelines.kraft.extract import parse_time_ms

        kr = cfg.sources.kraft
        at_time = None if kr.at_time is None else parse_time_ms(kr.at_time)
        steps.extract_kraft(ctx, paths=list(kr.paths), at_offset=kr.at_offset, at_time_ms=at_time)
    elif unit.startswith("extract:") and unit.count(":") == 2:
        _run_cluster_unit(cfg, ctx, *unit.split(":")[1:])
    elif unit == "build":
        steps.build(ctx, assignors=dict(cfg.assignors), run_dbt=False, settle=cfg.history.rule)
    elif unit == "dbt":
        steps.dbt(ctx)
    elif unit == "validate":
        steps.validate(ctx, strict=cfg.strict)
    elif unit == "report":
        steps.report(ctx)
    else:  # pragma: no cover - plan() makes only the units above
        raise UsageError(f"unknown unit {unit!r}")


def _run_cluster_unit(cfg: AuditConfig, ctx: RunContext, alias: str, kind: str) -> None:
    """``extract:<alias>:offsets|mm2``: an extract of cluster ``alias`` into its warehouse."""
    from dataclasses import replace

    from pipelines.clusters import cluster_warehouse

    c = cfg.clusters[alias]
    cctx = replace(ctx, warehouse=cluster_warehouse(ctx.warehouse, alias))
    if kind == "offsets":
        steps.extract_offsets(cctx, paths=[*c.kafka.log_dirs, *c.kafka.consumer_offsets], workers=c.kafka.workers)
    else:
        steps.extract_mm2(cctx, paths=list(c.mirror_maker))


def run_config(
    opts,
    config: Path,
    only: list[str] | None = None,
    show_plan: bool = False,
    explicit: frozenset[str] = frozenset(),
) -> None:
    """Every unit of ``config``'s plan (or the ``only`` ones), in order. ``opts`` are the global
    options (``pipelines.cli``); those named in ``explicit`` were given on the command line and
    win over the config's values. The run: the one named (or ``latest``), else a new one."""
    cfg = load_config(config)
    ctx, choice = run_context(cfg, opts, explicit)
    units = select(plan(cfg), only or [])
    if show_plan:
        print(plan_json(cfg, ctx, units))
        return
    ctx.say(f"{choice.line()}: {', '.join(units)}")
    for unit in units:
        run_unit(cfg, ctx, unit)
