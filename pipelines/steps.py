"""The pipeline steps as the CLI, the demo and :mod:`pipelines.runner` (``kaudit run``, the
Airflow DAG) call them. Each step reads the run's tables from the warehouse and writes its own
partition; a step with nothing to work on says so (:class:`InputError`, exit 1) instead of
producing an empty result."""

from __future__ import annotations

from pathlib import Path

from pipelines.context import RunContext
from pipelines.errors import InputError, UsageError
from pipelines.settle import DEFAULT_RULE, SettleRule
from pipelines.warehouse.tables import ZOOKEEPER_ASSIGNORS as ASSIGNORS

# what a run must hold for build to have something to audit
EXTRACTED = ("raw/znodes", "raw/offset_commits", "raw/group_metadata", "raw/metadata_records",
             "raw/consumer_group_metadata", "raw/group_coordinator_records", "raw/share_partition_states")
BUILT = "core/assignment_audit"


# --- extract ---------------------------------------------------------------------------------


def _show_quarantine(ctx: RunContext, step: str, label: str) -> None:
    from pipelines.warehouse.quarantine import step_lines

    for line in step_lines(ctx.warehouse, ctx.run_id, step, label):
        ctx.say(line)


def extract_zk(ctx: RunContext, **options) -> dict:
    """``kaudit extract zk``: a live ZooKeeper, read-only."""
    from pipelines.zookeeper.extract import LIVE_STEP, extract_live

    meta = extract_live(ctx, **options)
    _show_quarantine(ctx, LIVE_STEP, "zk")
    return meta


def extract_zk_snapshot(ctx: RunContext, path: Path, at_zxid: int | None = None, chroot: str | None = None) -> dict:
    """``kaudit extract zk-snapshot``: a ZooKeeper data dir or snapshot file, offline."""
    from pipelines.zookeeper.extract import SNAPSHOT_STEP, extract_snapshot

    meta = extract_snapshot(ctx, path=path, at_zxid=at_zxid, chroot=chroot)
    _show_quarantine(ctx, SNAPSHOT_STEP, "zk-snapshot")
    return meta


def extract_offsets(ctx: RunContext, paths: list[Path], workers: int | None = None) -> dict:
    """``kaudit extract offsets``: ``__consumer_offsets`` segments."""
    from pipelines.kafka.extract import STEP_OFFSETS
    from pipelines.kafka.extract import extract_offsets as run

    counts = run(ctx, paths=paths, workers=workers)
    _show_quarantine(ctx, STEP_OFFSETS, "offsets")
    return counts


def extract_log_end(ctx: RunContext, paths: list[Path], offsets_file: Path | None = None,
                    topic_configs: Path | None = None) -> dict:
    """``kaudit extract log-end``: data-topic log ends from log dirs or a GetOffsetShell file,
    topic configs from a ``topic:config=value`` file."""
    from pipelines.kafka.extract import STEP_LOG_END
    from pipelines.kafka.extract import extract_log_end as run

    counts = run(ctx, paths=paths, offsets_file=offsets_file, topic_configs=topic_configs)
    _show_quarantine(ctx, STEP_LOG_END, "log-end")
    return counts


def extract_mm2(ctx: RunContext, paths: list[Path]) -> dict:
    """``kaudit extract mm2``: MirrorMaker 2's offset-sync and checkpoint topics."""
    from pipelines.kafka.mm2_extract import STEP
    from pipelines.kafka.mm2_extract import extract_mm2 as run

    counts = run(ctx, paths=paths)
    _show_quarantine(ctx, STEP, "mm2")
    return counts


def extract_kraft(
    ctx: RunContext, paths: list[Path], at_offset: int | None = None, at_time_ms: int | None = None
) -> dict:
    """``kaudit extract kraft``: a KRaft metadata log (segments and snapshots), replayed."""
    from pipelines.kraft.extract import STEP, Target
    from pipelines.kraft.extract import extract_kraft as run

    meta = run(ctx, paths=paths, target=Target(at_offset, at_time_ms))
    _show_quarantine(ctx, STEP, "kraft")
    return meta


# --- build / validate / report ---------------------------------------------------------------


def require_extracted(ctx: RunContext) -> None:
    """:class:`InputError` unless the run holds ZooKeeper znodes or ``__consumer_offsets`` records
    (a step's tables are visible whole or not at all: its ledger row)."""
    from pipelines.kafka.mm2_extract import in_run as mm2_in_run
    from pipelines.warehouse.reading import row_count

    if not any(row_count(ctx.warehouse, t, ctx.run_id) for t in EXTRACTED) and not mm2_in_run(ctx):
        raise InputError(
            f"run {ctx.run_id}: nothing extracted to build (no ZooKeeper znodes, no __consumer_offsets records, "
            f"no KRaft metadata in {ctx.warehouse.root}); run `kaudit extract zk-snapshot|zk|offsets|kraft ...` first"
        )


def require_built(ctx: RunContext, step: str) -> None:
    """:class:`InputError` unless the run's core tables were built (published whole, by the
    build's ledger row)."""
    if not ctx.warehouse.exists(BUILT, ctx.run_id):
        raise InputError(f"run {ctx.run_id}: not built yet (no {BUILT}), nothing to {step}; run `kaudit build` first")


def parse_assignors(values: list[str]) -> dict[str, str]:
    """``GROUP=range|roundrobin`` options -> {group: assignor}."""
    out: dict[str, str] = {}
    for value in values:
        group, sep, name = value.rpartition("=")
        if not sep or not group or name not in ASSIGNORS:
            raise UsageError(f"--assignor {value!r}: expected GROUP={'|'.join(ASSIGNORS)}")
        out[group] = name
    return out


def assignor_args(assignors: dict[str, str]) -> list[str]:
    """``{group: assignor}`` as the ``--assignor`` options of ``build_core.py`` (:func:`parse_assignors`)."""
    return [f"--assignor={g}={a}" for g, a in sorted(assignors.items())]


def dbt_job_args(ctx: RunContext) -> list[str]:
    """The options of ``dbt_build.py`` for ``ctx``: its dbt target, if it names one."""
    return ["--target", ctx.dbt_target] if ctx.dbt_target else []


def build(ctx: RunContext, assignors: dict[str, str] | None = None, run_dbt: bool = True,
          settle: SettleRule = DEFAULT_RULE) -> None:
    """Spark core tables, then :func:`dbt` (unless ``run_dbt`` is False). ``settle``: the
    history's settle window and stuck limit.

    With a non-local master (``spark://``, ``yarn``, ``k8s://``) each Spark step runs as
    ``spark-submit pipelines/jobs/<step>.py`` with the package shipped (``pipelines.cluster``)."""
    require_extracted(ctx)
    from pipelines import cluster  # (hashlib, zipfile, tempfile: not imported by the extracts)

    if cluster.submits(ctx):
        cluster.submit_job(ctx, "build_core", [*assignor_args(assignors or {}), *settle.args()])
    else:
        from pipelines.spark.build import build_core
        from pipelines.transform.dbt_runner import parse_ahead

        parsed = parse_ahead(ctx) if run_dbt else None
        try:
            build_core(ctx, assignors or {}, settle)
        finally:
            if parsed is not None:
                parsed.result()
    if run_dbt:
        dbt(ctx)


def dbt(ctx: RunContext) -> None:
    """``dbt build`` of the marts and snapshots on ``ctx.dbt_target`` (in this process, or as
    ``spark-submit pipelines/jobs/dbt_build.py`` like the Spark steps)."""
    from pipelines import cluster

    if cluster.submits(ctx):
        cluster.submit_job(ctx, "dbt_build", dbt_job_args(ctx))
        return
    from pipelines.transform.dbt_runner import run_dbt

    run_dbt(ctx)


def validate(ctx: RunContext, strict: bool = False) -> None:
    """Great Expectations suites; raises ExpectationsFailed (exit 3) with ``strict``."""
    require_built(ctx, "validate")
    from pipelines import cluster

    if cluster.submits(ctx):
        cluster.submit_job(ctx, "validate", ["--strict"] if strict else [])
        return
    from pipelines.quality.run import run_validation

    run_validation(ctx, strict=strict)


def report(ctx: RunContext) -> None:
    from pipelines.report.write import write_report

    require_built(ctx, "report on")
    write_report(ctx)
