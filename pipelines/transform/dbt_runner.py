"""``dbt build`` of the marts and snapshots, through dbt's Python API (``dbtRunner``).

The project is the repository root (``dbt_project.yml``, ``models/``, ``snapshots/``,
``macros/``) and so is the profiles dir (``profiles.yml``). Target ``session`` (default) runs
dbt-spark's session adapter in this process: the runner first creates kaudit's SparkSession
with :func:`pipelines.spark.session.get_spark` and binds its catalog ``kaudit`` to the
warehouse's, and dbt-spark's ``SparkSession.builder.enableHiveSupport().getOrCreate()`` then
returns that same session (a builder can only *get* an existing session; static settings are
kept), so dbt sees kaudit's settings (UTC, the warehouse's Iceberg catalog). Target ``thrift``
runs the same project on a Spark Thrift Server started over the same catalog.

The marts and the history are Iceberg tables of the catalog (``kaudit.marts.<model>``,
``kaudit.snapshots.<snapshot>``), written on the build's branch and published when the whole
build succeeded, as the other steps' tables (:mod:`pipelines.transform.iceberg_ledger`): a build
killed or failed half-way leaves ``main`` of every table and the ledger as they were. One dbt
build of a warehouse runs at a time (``<warehouse>/.locks/dbt.lock``, whatever the run): the
history is one chain of MERGEs, and the session catalog's views are shared by a Thrift Server's
clients. Nothing is written to the working directory: dbt's logs go to
``<warehouse>/logs/dbt/``, its target dir (manifest, saved parse, compiled SQL, run results) to
the run's ``<warehouse>/dbt/target/run_id=<id>/``.

dbt keeps its flags, adapter and manifest in module state: a process runs one dbt invocation
at a time (``_ONE_AT_A_TIME``), whichever thread asks (:func:`parse_ahead`'s, the demo's two runs').

The run being built, its tables and its branch reach the project in env vars that only
executing macros and the profile read (``KAUDIT_RUN_ID``, ``KAUDIT_SOURCES``: ``macros/run_columns.sql``;
``KAUDIT_WAP_BRANCH``: ``profiles.yml``), set for the invocation; no var is passed. So a parse holds nothing
of a warehouse or a run: one parse serves every build, in this process (:func:`parse_ahead`'s
manifest) and in the next (a run's target dir starts with the newest saved parse of the
warehouse's runs, or else the one ``make`` saved at install: :func:`save_install_parse`; dbt
checks either before it uses it). dbt's parse of the project in full: 2.0-2.6 s, 3.1 CPU s;
from a saved parse 0.3 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.context import RunContext, in_background
from pipelines.errors import StepError
from pipelines.transform.project import project_dir
from pipelines.transform.sources import run_sources

FAILED = frozenset({"error", "fail", "runtime error"})
RUN_ENV, SOURCES_ENV, BRANCH_ENV = "KAUDIT_RUN_ID", "KAUDIT_SOURCES", "KAUDIT_WAP_BRANCH"
WAP_BRANCH = "spark.wap.branch"  # the session setting profiles.yml sets from BRANCH_ENV
BUILD_LOCK = "dbt.lock"  # one dbt build of a warehouse at a time (in its locks' directory)
SAVED_PARSE = "partial_parse.msgpack"  # dbt's saved parse, in its target dir
INSTALL_PARSES = Path(sys.prefix) / "kaudit-dbt-parse"  # <target>/partial_parse.msgpack: make's
PROJECT_FILES = ("dbt_project.yml", "profiles.yml", "models", "macros", "snapshots", "data-tests", "seeds",
                 "analyses")  # (dbt_project.yml's paths)
SESSION_TARGET = "session"  # profiles.yml's target on this process's SparkSession
_ONE_AT_A_TIME = threading.Lock()
# (project, target) -> (_parse_state, the parse's Future[Manifest | None]): the newest parse of
# each only (a newer state of the project's files replaces it)
_PARSES: dict[tuple[str, str], tuple[tuple, Future]] = {}
_PARSES_LOCK = threading.Lock()


def dbt_args(ctx: RunContext, target: str, command: str = "build", extra: list[str] | None = None) -> list[str]:
    """The command line handed to ``dbtRunner.invoke``: nothing in it names the run but the
    target dir (see :func:`run_env`)."""
    return _invocation(command, target, target_dir(ctx), ctx.warehouse.root / "logs" / "dbt", extra)


def _invocation(command: str, target: str, target_path: Path, log_path: Path,
                extra: list[str] | None = None) -> list[str]:
    project = project_dir()
    return [
        command,
        "--project-dir", str(project),
        "--profiles-dir", str(project),
        "--target", target,
        "--target-path", str(target_path),
        "--log-path", str(log_path),
        "--log-level", "none",
        "--log-level-file", "info",
        "--no-use-colors",
        "--no-send-anonymous-usage-stats",  # dbt's tracking off for this invocation (no env var set)
        "--no-version-check",
        *(extra or []),
    ]


def target_dir(ctx: RunContext) -> Path:
    return ctx.warehouse.partition_dir("dbt/target", ctx.run_id)


@contextmanager
def run_env(ctx: RunContext, branch: str) -> Iterator[None]:
    """The run (``KAUDIT_RUN_ID``), its tables (``KAUDIT_SOURCES``: ``sources.run_sources`` as
    JSON) and the build's ``branch`` (``KAUDIT_WAP_BRANCH``) in this process's environment while
    a dbt invocation reads it (dbt copies the environment as it starts); what was there before
    is put back after."""
    values = {RUN_ENV: ctx.run_id, SOURCES_ENV: json.dumps(run_sources(ctx.warehouse, ctx.run_id)),
              BRANCH_ENV: branch}
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
    return target or ctx.dbt_target or SESSION_TARGET


def parse_ahead(ctx: RunContext) -> Future:
    """``dbt parse`` of the project, on a thread: called as the Spark core build starts, it
    takes dbt's import (1.4 s) and parse off the build's path, and the build then runs on its
    manifest (:func:`run_dbt`). The process parses once per target and state of the project's
    files, whatever the warehouse: a second run's call (the demo's) gets the same parse. The
    parse starts from the run's target dir with the newest saved parse of the warehouse, or the
    one saved at install (:func:`_seed_saved_parse`), which dbt checks (vars, profile, target,
    files) before it parses only what changed. The result is the manifest, or ``None`` whatever
    went wrong: a parse that fails here fails again, and is reported, in the build."""
    target = _target(ctx)
    state = _parse_state(target)
    with _PARSES_LOCK:
        known = _PARSES.get(state[0])
        if known is None or known[0] != state:
            known = _PARSES[state[0]] = (state, in_background(lambda: _parse(ctx, target), "dbt-parse"))
        return known[1]


def _parse_state(target: str) -> tuple:
    """What a parse depends on, besides dbt: ``(project dir, target)`` and the project's files
    as they are now (path, size and mtime of each); not the warehouse."""
    project = project_dir()
    files = []
    for name in PROJECT_FILES:
        path = project / name
        for f in sorted(path.rglob("*")) if path.is_dir() else [path] if path.is_file() else []:
            if f.is_file():
                st = f.stat()
                files.append((str(f.relative_to(project)), st.st_size, st.st_mtime_ns))
    return (str(project), target), hash(tuple(files))


def _parse(ctx: RunContext, target: str):
    try:
        from dbt.cli.main import dbtRunner

        _seed_saved_parse(ctx, target)
        with _ONE_AT_A_TIME:
            result = dbtRunner().invoke(dbt_args(ctx, target, "parse"))
        return result.result if result.success else None
    except Exception:  # noqa: BLE001 - the build parses again and reports what is wrong
        return None


def _parsed(ctx: RunContext, target: str):
    """A copy of the manifest of :func:`parse_ahead`'s parse for this target, when
    the project's files are as they were then; else ``None``. A copy: a build compiles the nodes
    of the manifest it runs."""
    state = _parse_state(target)
    with _PARSES_LOCK:
        known = _PARSES.get(state[0])
    if known is None or known[0] != state:
        return None
    manifest = known[1].result()
    return manifest.deepcopy() if manifest is not None else None


def _seed_saved_parse(ctx: RunContext, target: str) -> None:
    """The run's target dir gets the newest saved parse among the warehouse's runs, else the
    one saved at install for ``target``, if it is not its own (a new run has none): dbt then
    parses only what changed since, or nothing. Any saved parse may be offered: dbt checks it
    holds before using it."""
    own = target_dir(ctx) / SAVED_PARSE
    part = own.with_name(f".{SAVED_PARSE}.{os.getpid()}.{threading.get_ident()}")
    try:
        saved = [(p.stat().st_mtime_ns, p) for p in own.parent.parent.glob(f"run_id=*/{SAVED_PARSE}")]
        installed = INSTALL_PARSES / target / SAVED_PARSE
        if not saved and installed.is_file():
            saved = [(installed.stat().st_mtime_ns, installed)]
        newest = max(saved, default=None)
        if newest is None or newest[1] == own:
            return
        own.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(newest[1], part)  # (its time too: the newest is the newest parse)
        os.replace(part, own)
    except OSError:  # (another process's run dir changing meanwhile): dbt parses in full
        part.unlink(missing_ok=True)


def run_dbt(
    ctx: RunContext, target: str | None = None, select: list[str] | None = None, unit_tests: bool = False
) -> None:
    """``dbt build`` (models, data tests, snapshots) for the run, on ``target`` (default:
    ``ctx.dbt_target``, else ``session``).

    dbt's unit tests check the models' SQL against fixed inputs, not the run's data: as dbt
    advises, they run where the project is tested (``unit_tests=True``: the suite), not in every
    build. In the demo's build they were 23 extra Spark queries, some over a minute each under load.

    Raises :class:`StepError` naming the first failed node and why."""
    from pipelines.transform import iceberg_ledger
    from pipelines.warehouse.iceberg import publish

    target = _target(ctx, target)
    warehouse = ctx.warehouse
    spark = None
    if target == SESSION_TARGET:
        from pipelines.warehouse.iceberg.catalog import bind_catalog

        spark = ctx.spark()  # dbt-spark's getOrCreate() reuses this session
        bind_catalog(spark, warehouse.catalog_config)

    from dbt.cli.main import dbtRunner

    extra = ["--select", *select] if select else []
    if not unit_tests:
        extra += ["--exclude-resource-type", "unit_test"]
    args = dbt_args(ctx, target, extra=extra)
    manifest = _parsed(ctx, target)
    if manifest is None:
        _seed_saved_parse(ctx, target)
    progress = _Progress(ctx)
    log = warehouse.root / "logs" / "dbt" / "dbt.log"
    build_lock = publish.publish_lock(warehouse.root, BUILD_LOCK)
    with build_lock, warehouse.transaction(ctx.run_id, iceberg_ledger.STEP) as tx:
        branch = iceberg_ledger.open_build(warehouse, ctx.run_id)
        iceberg_ledger.drop_working_tables(warehouse)  # (a selection builds those it reads: `+<mart>`)
        try:
            with _ONE_AT_A_TIME, run_env(ctx, branch), ctx.progress() as bar:
                started = time.monotonic()
                progress.bar = bar
                progress.task = bar.add_task("dbt build", total=None)
                try:
                    result = dbtRunner(manifest=manifest, callbacks=[progress]).invoke(args)
                finally:
                    if spark is not None:  # (dbt-spark set the build's branch on the shared session)
                        spark.conf.unset(WAP_BRANCH)
            elapsed = time.monotonic() - started
            _raise_failed(result, log)
        except BaseException:
            with contextlib.suppress(Exception):  # (the build's own error is the one to report)
                iceberg_ledger.note_tables(warehouse, ctx.run_id)  # tables it created: their branches go too
            raise
        built = iceberg_ledger.built_tables(result.result)
        tx.written.update(iceberg_ledger.branch_heads(warehouse, ctx.run_id, built))

    counts: dict[str, int] = {}
    for unique_id, _status in progress.finished:
        kind = unique_id.split(".", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    summary = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(counts.items()))
    ctx.say(f"dbt build ({target}): {summary or 'nothing to do'} in {elapsed:.1f}s; "
            f"marts in {len(built)} Iceberg tables of catalog kaudit (marts, snapshots)")


def _raise_failed(result, log: Path) -> None:
    """:class:`StepError` naming the first failed node and why, if the invocation failed."""
    failures = _failures(result.result)
    if failures:
        first = failures[0]
        more = f" (+{len(failures) - 1} more)" if len(failures) > 1 else ""
        raise StepError(f"dbt build failed: {first}{more}; log: {log}")
    if result.exception is not None:
        raise StepError(f"dbt build failed: {_one_line(result.exception)}; log: {log}")
    if not result.success:
        raise StepError(f"dbt build failed; log: {log}")


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



def save_install_parse(target: str = SESSION_TARGET) -> Path:
    """dbt's parse of the project for ``target``, saved where the first build of every warehouse
    starts from it (``INSTALL_PARSES``); the parse appears whole or not at all."""
    from dbt.cli.main import dbtRunner

    out = INSTALL_PARSES / target / SAVED_PARSE
    with tempfile.TemporaryDirectory() as tmp:
        done = dbtRunner().invoke(_invocation("parse", target, Path(tmp), Path(tmp)))
        if not done.success:
            sys.exit(f"dbt parse of {project_dir()} failed: {done.exception or 'see its log'}")
        out.parent.mkdir(parents=True, exist_ok=True)
        part = out.with_name(f".{SAVED_PARSE}.{os.getpid()}")
        shutil.copyfile(Path(tmp) / SAVED_PARSE, part)
        os.replace(part, out)
    return out


if __name__ == "__main__":
    saved = save_install_parse(SESSION_TARGET)
    print(f"dbt's saved parse ({SESSION_TARGET}): {saved} ({saved.stat().st_size} bytes)")
