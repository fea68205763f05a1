"""``kaudit validate``: every suite of ``expectations/`` on the run's tables, with Spark.

Writes ``validation/run_id=<id>/results.json`` (one entry per check: suite, expectation,
success, unexpected_count, level, description, ...) and ``failures/<check>.parquet`` (the
failing rows of each failed check), and the same checks as rows of the warehouse table
``quality/validation_results`` (``pipelines.quality.results``), staged and published
atomically with the step, then rebuilds the shared Data Docs site ``validation/data_docs/``."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pipelines.context import RunContext, in_background
from pipelines.errors import ExpectationsFailed, InputError

VALIDATION = "validation"
RESULTS_FILE = "results.json"
# GX's project (``validation/``: its stores and the Data Docs site every run adds to) and its
# module state serve one validation at a time in a process (the demo runs two runs side by side)
_ONE_AT_A_TIME = threading.Lock()


def results_path(warehouse, run_id: str) -> Path:
    return warehouse.partition_dir(VALIDATION, run_id) / RESULTS_FILE


def read_results(warehouse, run_id: str) -> list[dict] | None:
    """The run's results.json entries, or None when the run was not validated."""
    path = results_path(warehouse, run_id)
    return json.loads(path.read_text()) if path.exists() else None


def result_entry(res) -> dict:
    """One results.json entry (contract keys first)."""
    entry = {
        "suite": res.suite,
        "expectation": res.check.name,
        "success": res.success,
        "unexpected_count": res.unexpected_count,
        "level": res.check.level,
        "description": res.check.description,
        "view": res.check.view,
        "gx_expectation": res.check.expectation.expectation_type,
        "element_count": res.element_count,
    }
    if res.error:
        entry["error"] = res.error
    return entry


def no_data_entry(suite: str, check, why: str) -> dict:
    """A check that was not evaluated because its view has no data: ``success`` is null (neither
    a pass nor a failure) and ``no_data`` says why."""
    return {
        "suite": suite,
        "expectation": check.name,
        "success": None,
        "unexpected_count": None,
        "level": check.level,
        "description": check.description,
        "view": check.view,
        "gx_expectation": check.expectation.expectation_type,
        "element_count": None,
        "no_data": why,
    }


def run_validation(ctx: RunContext, strict: bool = False) -> list[dict]:
    from pipelines.quality.sources import RunTables
    from pipelines.quality.views import VIEWS, missing_data
    from pipelines.spark.session import is_small_run
    from pipelines.warehouse.reading import run_rows

    tables = RunTables(ctx.warehouse, ctx.run_id)
    small = is_small_run(run_rows(ctx.warehouse, ctx.run_id))  # its views are collected to the driver
    why_empty = {v: missing_data(v, tables.rows) for v in VIEWS}  # (reads footers: once per view)
    with_data = [v for v, why in why_empty.items() if why is None]
    pending = _compute_views(ctx, tables, with_data, small) if with_data else None

    from pipelines.quality.gx_runner import GxProject
    from pipelines.quality.spec import ERROR, load_suites

    suites = load_suites()
    no_data = {v: why for s in suites for v in s.views() if (why := why_empty[v]) is not None}
    if len(no_data) == len({v for s in suites for v in s.views()}):
        raise InputError(f"run {ctx.run_id}: no data for any expectation ({next(iter(no_data.values()))})")
    views = pending.result()  # (before the GX project: writing its datasource gets GX a SparkSession)
    views_used = [v for s in suites for v in s.views() if v not in no_data]
    with _ONE_AT_A_TIME:
        project = GxProject.for_root(ctx.warehouse.table_dir(VALIDATION), views_used)
        entries, docs = _run_suites(ctx, project, suites, views, no_data)
    for view in views.values():
        view.release()

    evaluated = [e for e in entries if e["success"] is not None]
    failed = [e for e in evaluated if not e["success"]]
    errors = [e for e in failed if e["level"] == ERROR]
    unjudged = [e for e in entries if e["success"] is None]
    ctx.say(
        f"validate: {len(suites)} suites, {len(evaluated)} expectations evaluated, "
        f"{len(errors)} error(s), {len(failed) - len(errors)} warning(s) failed"
        + (f", {len(unjudged)} without data" if unjudged else "")
    )
    for reason in dict.fromkeys(e["no_data"] for e in unjudged):
        names = [f"{e['suite']}.{e['expectation']}" for e in unjudged if e["no_data"] == reason]
        ctx.say(f"  no data  {', '.join(names)}: {reason}")
    for e in failed:
        count = "?" if e["unexpected_count"] is None else e["unexpected_count"]
        error = f" ({e['error']})" if e.get("error") else ""
        ctx.say(f"  {e['level']:<7} {e['suite']}.{e['expectation']}: {count} row(s)" + error)
    ctx.say(f"validate: results {results_path(ctx.warehouse, ctx.run_id)}; Data Docs {docs}")
    if strict and errors:
        raise ExpectationsFailed(
            f"{len(errors)} error-level expectation(s) failed: {', '.join(e['expectation'] for e in errors)}"
        )
    return entries


def _run_suites(ctx: RunContext, project, suites, views: dict, no_data: dict[str, str]) -> tuple[list[dict], Path]:
    """Every check of ``suites`` on the computed ``views`` (a view in ``no_data`` gets no-data
    entries); writes results.json, the failing rows and the table ``quality/validation_results``
    as the run's partition, then the Data Docs. Returns the entries and the Data Docs' index."""
    from pipelines.quality import results

    entries: list[dict] = []
    rows: list[dict] = []
    total = sum(len(s.checks) for s in suites)
    with ctx.warehouse.transaction(ctx.run_id, step="validate") as tx:
        out = tx.staging_dir(VALIDATION)
        (out / "failures").mkdir(parents=True, exist_ok=True)
        with ctx.progress() as progress:
            task = progress.add_task("validate", total=total)
            for suite in suites:
                for view in suite.views():
                    checks = [c for c in suite.checks if c.view == view]
                    if view in no_data:
                        entries += [no_data_entry(suite.name, c, no_data[view]) for c in checks]
                        rows += [results.no_data_row(suite.name, c, no_data[view]) for c in checks]
                        progress.advance(task, len(checks))
                        continue
                    progress.update(task, description=f"{suite.name}: {view}")
                    for res in project.run_checks(suite.name, view, views[view].frame, checks, ctx.run_id):
                        entries.append(result_entry(res))
                        rows.append(results.result_row(res))
                        if not res.success and res.error is None:
                            _export_failures(views[view], res, out / "failures" / f"{res.check.name}.parquet")
                        progress.advance(task)
        (out / RESULTS_FILE).write_text(json.dumps(entries, indent=2, default=str) + "\n")
        tx.write(results.TABLE, results.results_table(rows))
        docs = project.build_docs()
    return entries, docs


def _compute_views(ctx: RunContext, tables, names: list[str], small: bool):
    """The views ``names`` (every view with data: the suites use them all) computed once
    (``pipelines.quality.materialized``), on a thread, with the run's SparkSession (started
    there in a new process), while this thread imports GX and loads the suites: the JVM's start
    and the views' Spark jobs overlap GX's import. Only when some view has data: a run with none
    fails before Spark starts."""
    from pipelines.quality.materialized import materialize
    from pipelines.quality.views import build_view

    def compute():
        tables.spark = ctx.spark()
        return materialize({v: build_view(v, tables) for v in names}, small)

    return in_background(compute, "validate-views")


def _export_failures(view, res, path: Path) -> None:
    """The failing rows of one failed check (the whole view for a table-level one), in view order."""
    import pyarrow.parquet as pq

    if res.row_ids is None and not res.table_level:
        return  # GX gave no row ids: nothing reliable to export
    pq.write_table(view.rows(res.row_ids), path, compression="zstd")
