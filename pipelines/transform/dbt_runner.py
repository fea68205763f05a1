"""``dbt build`` of the marts and snapshots, through dbt's Python API (``dbtRunner``).

The project is the repository root (``dbt_project.yml``, ``models/``, ``snapshots/``,
``macros/``) and so is the profiles dir (``profiles.yml``). Target ``session`` (default) runs
dbt-spark's session adapter in this process: the runner first creates kaudit's SparkSession
with :func:`pipelines.spark.session.get_spark`, and dbt-spark's
``SparkSession.builder.enableHiveSupport().getOrCreate()`` then returns that same session (a
builder can only *get* an existing session; static settings such as the catalog are kept), so
dbt sees kaudit's settings (UTC, millisecond Parquet timestamps) and the marts are registered
in kaudit's catalog. Target ``thrift`` runs the same project on a Spark Thrift Server.

Nothing is written to the working directory: dbt's logs go to ``<warehouse>/logs/dbt/``, its
target dir (manifest, saved parse, compiled SQL, run results) to the run's
``<warehouse>/dbt/target/run_id=<id>/``, the schemas'
directories to ``<warehouse>/dbt/schemas/`` and the marts/snapshots to
``<warehouse>/marts/`` and ``<warehouse>/snapshots/``.

dbt keeps its flags, adapter and manifest in module state: a process runs one dbt invocation
at a time (``_ONE_AT_A_TIME``), whichever thread asks (the demo builds its two runs side by side).
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from pipelines.context import RunContext, in_background
from pipelines.errors import StepError
from pipelines.transform.project import project_dir
from pipelines.transform.sources import source_vars

FAILED = frozenset({"error", "fail", "runtime error"})
_ONE_AT_A_TIME = threading.Lock()


def dbt_args(ctx: RunContext, target: str, command: str = "build", extra: list[str] | None = None,
             core_built: bool = False) -> list[str]:
    """The command line handed to ``dbtRunner.invoke`` (``core_built``: see ``source_vars``)."""
    root = ctx.warehouse.root
    project = project_dir()
    sources = source_vars(ctx.warehouse, ctx.run_id, core_built)
    variables = {"warehouse": str(root), "run_id": ctx.run_id, "kaudit_sources": sources}
    return [
        command,
        "--project-dir", str(project),
        "--profiles-dir", str(project),
        "--target", target,
        "--vars", json.dumps(variables),
        "--target-path", str(ctx.warehouse.partition_dir("dbt/target", ctx.run_id)),
        "--log-path", str(root / "logs" / "dbt"),
        "--log-level", "none",
        "--log-level-file", "info",
        "--no-use-colors",
        "--no-send-anonymous-usage-stats",  # dbt's tracking off for this invocation (no env var set)
        "--no-version-check",
        *(extra or []),
    ]


@dataclass
class _Progress:
    """Feeds dbt's events into a rich progress bar: one step per node finished."""

    ctx: RunContext
    bar: object = None
    task: object = None
    finished: list[tuple[str, str]] = field(default_factory=list)

    def __call__(self, event) -> None:
        try:
            self._on(event)
        except Exception:  # progress is cosmetic: never let it break a build
            pass

    def _on(self, event) -> None:
        name = event.info.name
        if name == "LogStartLine" and self.bar is not None:
            self.bar.update(self.task, total=event.data.total)
        elif name == "NodeFinished":
            info = event.data.node_info
            self.finished.append((info.unique_id, info.node_status))
            if self.bar is not None:
                self.bar.update(self.task, advance=1, description=f"dbt {info.node_name} {info.node_status}")


def _target(ctx: RunContext, target: str | None = None) -> str:
    """The profiles.yml target: ``target``, else the run's (``ctx.dbt_target``), else ``session``."""
    return target or ctx.dbt_target or "session"


def parse_ahead(ctx: RunContext) -> Future:
    """``dbt parse`` of the project, on a thread, with the vars the run's ``dbt build`` will pass
    once the Spark core build has written the ``core/*`` tables: called as that build starts, it
    takes dbt's import (1.4 s) and its full parse (2.0-2.6 s on the demo) off the build's path,
    whose own parse is then dbt's partial parse of an unchanged project (0.3-0.9 s). dbt decides
    whether the saved parse still holds (its vars, profile, target, files): when a prediction
    was wrong, ``dbt build`` parses in full, as it did before. The result is ``None`` whatever
    happened: a parse that fails here fails again, and is reported, in the build. The parse is
    saved in the run's target dir: another run's parse or build does not replace it."""

    def parse() -> None:
        try:
            from dbt.cli.main import dbtRunner

            with _ONE_AT_A_TIME:
                dbtRunner().invoke(dbt_args(ctx, _target(ctx), "parse", core_built=True))
        except Exception:  # noqa: BLE001 - the build parses again and reports what is wrong
            pass

    return in_background(parse, "dbt-parse")


def run_dbt(
    ctx: RunContext, target: str | None = None, select: list[str] | None = None, unit_tests: bool = False
) -> None:
    """``dbt build`` (models, data tests, snapshots) for the run, on ``target`` (default:
    ``ctx.dbt_target``, else ``session``).

    dbt's unit tests check the models' SQL against fixed inputs, not the run's data: as dbt
    advises, they run where the project is tested (``unit_tests=True``: the suite), not in every
    build. In the demo's build they were 23 extra Spark queries, some over a minute each under load.

    Raises :class:`StepError` naming the first failed node and why."""
    target = _target(ctx, target)
    if target == "session":
        ctx.spark()  # dbt-spark's getOrCreate() reuses this session

    from dbt.cli.main import dbtRunner

    extra = ["--select", *select] if select else []
    if not unit_tests:
        extra += ["--exclude-resource-type", "unit_test"]
    args = dbt_args(ctx, target, extra=extra)
    progress = _Progress(ctx)
    with _ONE_AT_A_TIME, ctx.progress() as bar:
        started = time.monotonic()
        progress.bar = bar
        progress.task = bar.add_task("dbt build", total=None)
        result = dbtRunner(callbacks=[progress]).invoke(args)
    elapsed = time.monotonic() - started
    log = ctx.warehouse.root / "logs" / "dbt" / "dbt.log"

    failures = _failures(result.result)
    if failures:
        first = failures[0]
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        raise StepError(f"dbt build failed: {first}{more}; log: {log}")
    if result.exception is not None:
        raise StepError(f"dbt build failed: {_one_line(result.exception)}; log: {log}")
    if not result.success:
        raise StepError(f"dbt build failed; log: {log}")

    counts: dict[str, int] = {}
    for unique_id, _status in progress.finished:
        kind = unique_id.split(".", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    summary = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(counts.items()))
    ctx.say(f"dbt build ({target}): {summary or 'nothing to do'} in {elapsed:.1f}s; "
            f"marts in {ctx.warehouse.root / 'marts'}")


def _failures(run_result) -> list[str]:
    out = []
    for r in getattr(run_result, "results", None) or []:
        status = str(getattr(r.status, "value", r.status)).lower()
        if status in FAILED:
            node = getattr(r, "node", None)
            what = f"{node.resource_type} {node.name}" if node is not None else "node"
            out.append(f"{what} {status}: {_one_line(r.message or 'no message')}")
    return out


def _one_line(message: object) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= 400 else text[:397] + "..."
