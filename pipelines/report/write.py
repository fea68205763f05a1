"""``kaudit report``: ``reports/run_id=<id>/index.html`` and ``summary.json``, staged and
published atomically as the run's partition of ``reports``."""

from __future__ import annotations

import json
from pathlib import Path

from pipelines.context import RunContext
from pipelines.report.facts import gather
from pipelines.report.page import render

REPORTS = "reports"


def write_report(ctx: RunContext) -> Path:
    facts = gather(ctx.warehouse, ctx.run_id)
    summary = facts.summary()
    with ctx.warehouse.transaction(ctx.run_id, step="report") as tx:
        out = tx.staging_dir(REPORTS)
        out.mkdir(parents=True, exist_ok=True)
        (out / "index.html").write_text(render(facts), encoding="utf-8")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    page = ctx.warehouse.partition_dir(REPORTS, ctx.run_id) / "index.html"
    problems = {s: sum(v for k, v in summary["assignment"][s].items() if k != "ok") for s in summary["assignment"]}
    ctx.say(
        f"report: {summary['inputs']['znodes']:,} znodes, {summary['inputs']['offset_records']:,} offset records, "
        f"{summary['inputs']['quarantined']:,} quarantined; assignment problems "
        + ", ".join(f"{s} {n:,}" for s, n in problems.items())
        + f"; {summary['offset_regressions']:,} regressions; expectations "
        f"{summary['expectations']['failed']}/{summary['expectations']['evaluated']} failed"
    )
    ctx.say(f"report: {page}")
    return page
