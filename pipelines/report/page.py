"""The report page: ``templates/report.html.j2`` (Jinja2, autoescape on) with the CSS and the
small sorting/filter script of ``assets/`` inlined, so the one file works offline."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from pipelines.report import charts
from pipelines.report.facts import GROUP_FINDINGS, SOURCES, Facts, Finding
from pipelines.report.order import nulls_last
from pipelines.report.rebalances import PAST_FINDINGS
from pipelines.version import version
from pipelines.warehouse.tables import ASSIGNMENT_STATUSES

HERE = Path(__file__).resolve().parent
FINDINGS_CSV = "findings.csv"
MAX_FINDINGS_PER_STATUS = 100  # rows per status on the page; findings.csv has them all
OPEN_GROUPS_UP_TO = 8  # more groups with findings than this: each collapsed to its summary line
MAX_BAR_GROUPS = 40
MAX_HEALTH_ROWS = 80


def _number(v, unknown: str = "unknown") -> Markup | str:
    if v is None:
        return Markup('<span class="unknown">{}</span>').format(unknown)
    return f"{v:,}" if isinstance(v, int) else str(v)


def _when(v: datetime | None, seconds: bool = False) -> str:
    if v is None:
        return ""
    return v.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


def _duration(seconds: float | None) -> str:
    """``3 d 4 h``, ``2 h 5 min``, ``4 min 10 s``, ``12.5 s``: the two largest units."""
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:g} s" if seconds == int(seconds) else f"{seconds:.1f} s"
    units = [("d", 86400), ("h", 3600), ("min", 60), ("s", 1)]
    s, parts = int(seconds), []
    for name, size in units:
        if s >= size or parts:
            parts.append(f"{s // size} {name}")
            s %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


@cache
def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _number
    env.filters["when"] = _when
    env.filters["duration"] = _duration
    return env


def _asset(name: str) -> Markup:
    # kaudit's own files, inlined verbatim: neither may contain "</style" or "</script"
    return Markup((HERE / "assets" / name).read_text(encoding="utf-8"))


def _finding_groups(findings: list[Finding]) -> tuple[list[dict], dict[str, tuple[int, int]]]:
    """Findings per (source, group), each status capped at MAX_FINDINGS_PER_STATUS rows."""
    totals = Counter(f.status for f in findings)
    shown: Counter = Counter()
    groups: dict[tuple[str, str], dict] = {}
    for f in findings:
        g = groups.setdefault((f.source, f.group_id), {"source": f.source, "group_id": f.group_id,
                                                       "counts": Counter(), "rows": [], "cut": 0})
        g["counts"][f.status] += 1
        if shown[f.status] < MAX_FINDINGS_PER_STATUS:
            shown[f.status] += 1
            g["rows"].append(f)
        else:
            g["cut"] += 1
    order = {s: i for i, s in enumerate(ASSIGNMENT_STATUSES)}
    out = sorted(groups.values(), key=lambda g: nulls_last(min(order.get(s, len(order)) for s in g["counts"]),
                                                           -sum(g["counts"].values()), g["source"], g["group_id"]))
    for g in out:
        g["counts"] = [(s, g["counts"][s]) for s in ASSIGNMENT_STATUSES if g["counts"].get(s)]
    capped = {s: (shown[s], n) for s, n in totals.items() if n > shown[s]}
    return out, capped


def _heat(f: Facts) -> dict | None:
    h = f.heatmap
    if h is None or not h.rows:
        return None
    bins = charts.heat_bins(max(h.cells.values(), default=0))
    days: list[list] = []
    for hour in h.hours:
        label = hour.strftime("%Y-%m-%d")
        if days and days[-1][0] == label:
            days[-1][1] += 1
        else:
            days.append([label, 1])
    rows = [
        {"label": label, "cells": [(n := h.cells.get((i, j), 0), charts.heat_color(n, bins), hour)
                                   for j, hour in enumerate(h.hours)]}
        for i, label in enumerate(h.rows)
    ]
    return {"bins": bins, "days": days, "hours": h.hours, "rows": rows, "empty": charts.HEAT_EMPTY}


def render(f: Facts, generated: datetime | None = None, findings_csv: str | None = FINDINGS_CSV) -> str:
    generated = generated or datetime.now(UTC)
    groups, capped = _finding_groups(f.findings)
    biggest = max((g.total for g in f.groups[:MAX_BAR_GROUPS]), default=0)
    bars = [{"g": g, "segments": charts.bar_segments(g.counts, biggest)} for g in f.groups[:MAX_BAR_GROUPS]]
    rings = {
        s: charts.ring([(f.assignment[s].get(st, 0), charts.STATUS_COLORS[st]) for st in ASSIGNMENT_STATUSES])
        for s in SOURCES
    }
    problems = sum(f.assignment[s][st] for s in SOURCES for st in ASSIGNMENT_STATUSES if st != "ok")
    top_lag = max((abs(g.known_lag) for g in f.health or []), default=0) or 1
    validation = f"../../validation/run_id={f.run_id}"
    return _environment().get_template("report.html.j2").render(
        f=f,
        generated=generated,
        css=_asset("report.css"),
        js=_asset("report.js"),
        sources=SOURCES,
        statuses=ASSIGNMENT_STATUSES,
        colors=charts.STATUS_COLORS,
        labels=charts.STATUS_LABELS,
        meanings=charts.STATUS_MEANINGS,
        problems=problems,
        groups=groups,
        open_groups=len(groups) <= OPEN_GROUPS_UP_TO,
        capped=capped,
        max_per_status=MAX_FINDINGS_PER_STATUS,
        findings_csv=findings_csv,
        group_finding_meanings=GROUP_FINDINGS,
        max_group_findings=MAX_FINDINGS_PER_STATUS,
        past_shown=PAST_FINDINGS,
        bars=bars,
        more_bar_groups=max(len(f.groups) - MAX_BAR_GROUPS, 0),
        rings=rings,
        health=(f.health or [])[:MAX_HEALTH_ROWS],
        more_health=max(len(f.health or []) - MAX_HEALTH_ROWS, 0),
        top_lag=top_lag,
        heat=_heat(f),
        validation_link=validation,
        validation_path=f.warehouse / "validation" / f"run_id={f.run_id}",
        data_docs_path=f.warehouse / "validation" / "data_docs" / "index.html",
        report_path=f.warehouse / "reports" / f"run_id={f.run_id}",
        version=version(),
    )
