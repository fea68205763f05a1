"""The report page: one HTML string with inline CSS and inline SVG, every value escaped."""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape

from pipelines.report import charts
from pipelines.report.facts import SOURCES, Facts
from pipelines.tables import ASSIGNMENT_STATUSES

DATA_DOCS_LINK = "../../validation/data_docs/index.html"

CSS = """
:root{--ink:#1d2330;--muted:#5c6473;--line:#e3e6eb;--bg:#f5f6f8;--card:#fff;--ok:#2b8a3e;--bad:#c92a2a;
--warn:#e67700;--accent:#364fc7}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.5 "Inter","Segoe UI","Helvetica Neue",Arial,sans-serif;
-webkit-font-smoothing:antialiased}
main{max-width:1120px;margin:0 auto;padding:36px 28px 64px}
header.top{display:flex;justify-content:space-between;align-items:flex-end;gap:24px;margin-bottom:20px}
.eyebrow{font-size:12px;letter-spacing:.12em;text-transform:uppercase;color:var(--accent);font-weight:700}
h1{font-size:30px;line-height:1.15;margin:4px 0 0;font-weight:750;letter-spacing:-.01em}
.meta{color:var(--muted);font-size:13px;text-align:right}
.meta code{font:600 13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--ink)}
.verdict{display:flex;gap:16px;align-items:center;border-radius:14px;padding:18px 22px;margin:0 0 22px;color:#fff}
.verdict.bad{background:linear-gradient(100deg,#c92a2a,#a61e4d)}
.verdict.warn{background:linear-gradient(100deg,#e67700,#d9480f)}
.verdict.ok{background:linear-gradient(100deg,#2b8a3e,#0b7285)}
.verdict.none{background:linear-gradient(100deg,#495057,#343a40)}
.verdict .big{font-size:21px;font-weight:700}
.verdict .sub{opacity:.9;font-size:14px}
.verdict .mark{font-size:30px;width:48px;height:48px;border-radius:50%;background:rgba(255,255,255,.18);
display:flex;align-items:center;justify-content:center;flex:none}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:14px;margin-bottom:14px}
.cards.inputs{margin-bottom:30px}.cards.inputs .value{font-size:26px}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:16px 18px;position:relative}
.card .label{font-size:12.5px;color:var(--muted);text-transform:uppercase;letter-spacing:.06em;font-weight:600}
.card .value{font-size:34px;font-weight:750;letter-spacing:-.02em;line-height:1.15;margin-top:4px;
font-variant-numeric:tabular-nums}
.card .note{font-size:13px;color:var(--muted)}
.card.alert{border-color:#ffc9c9;background:#fff5f5}.card.alert .value{color:var(--bad)}
.card.caution{border-color:#ffe8cc;background:#fff9f0}.card.caution .value{color:var(--warn)}
.card.good .value{color:var(--ok)}
.card svg{position:absolute;right:16px;bottom:16px}
section{background:var(--card);border:1px solid var(--line);border-radius:14px;padding:22px 24px;margin-bottom:22px}
section h2{font-size:19px;margin:0 0 2px;font-weight:700}
section p.lead{margin:0 0 14px;color:var(--muted);font-size:14px}
.empty{color:var(--muted);font-style:italic;padding:8px 0}
.notbuilt{display:inline-block;background:#f1f3f5;color:#495057;border-radius:6px;padding:3px 9px;font-size:13px}
table{border-collapse:collapse;width:100%;font-size:14px}
th{text-align:left;font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);font-weight:600;
border-bottom:2px solid var(--line);padding:8px 10px}
td{padding:7px 10px;border-bottom:1px solid #eef0f3;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr:hover td{background:#f8f9fb}
td code,.mono{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
.chip{display:inline-block;border-radius:999px;padding:1px 9px;font-size:12px;font-weight:600;color:#fff;
white-space:nowrap;margin:1px 4px 1px 0}
.chip.pass{background:var(--ok)}.chip.fail{background:var(--bad)}.chip.warnc{background:var(--warn)}
.chip.muted{background:#adb5bd}
.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:13px;color:var(--muted);margin:6px 0 10px}
.legend .key{display:inline-flex;align-items:center;gap:6px}
.legend i{width:12px;height:12px;border-radius:3px;display:inline-block}
svg.chart .lbl{font-size:13px;fill:#1d2330}svg.chart .lbl.small{font-size:12px}
svg.chart .src{font-size:11px;fill:#868e96}svg.chart .seg{font-size:11px;fill:#fff;font-weight:700}
svg.chart .num{font-size:12px;fill:#5c6473;font-weight:600}svg.chart .axis{font-size:11px;fill:#868e96}svg.chart .day{fill:#1d2330;font-weight:600}
.bar{height:10px;border-radius:5px;background:#dbe4ff;min-width:2px}
.bar.neg{background:#ffa8a8}
.totals{display:grid;grid-template-columns:1fr 1fr;gap:18px;margin-bottom:14px}
.totals h3{font-size:14px;margin:0 0 6px;text-transform:capitalize}
.more{color:var(--muted);font-size:13px;margin-top:6px}
a{color:var(--accent);font-weight:600}
footer{color:var(--muted);font-size:12.5px;text-align:center;margin-top:30px}
"""


def _n(v) -> str:
    return "–" if v is None else f"{v:,}" if isinstance(v, int) else escape(str(v))


def _card(label: str, value, note: str = "", tone: str = "", extra: str = "") -> str:
    return (
        f'<div class="card {tone}">{extra}<div class="label">{escape(label)}</div>'
        f'<div class="value" data-metric="{escape(label)}">{_n(value)}</div>'
        f'<div class="note">{escape(note)}</div></div>'
    )


def _verdict(f: Facts) -> str:
    problems = sum(f.assignment[s][st] for s in SOURCES for st in ASSIGNMENT_STATUSES if st != "ok")
    findings = (
        f"{problems:,} partition(s) with assignment problems · {f.regression_count:,} offset regression(s) · "
        f"{f.quarantined:,} quarantined input(s)"
    )
    if f.expectations is None:
        tone, mark, big = "none", "?", "Not validated yet: run kaudit validate"
    elif f.errors_failed:
        tone, mark = "bad", "✕"
        big = f"{f.errors_failed} of {len(f.expectations)} checks failed at error level"
    elif f.expectations_failed:
        tone, mark = "warn", "!"
        big = f"No errors; {f.expectations_failed} warning(s) of {len(f.expectations)} checks"
    else:
        tone, mark, big = "ok", "✓", f"All {len(f.expectations)} checks passed"
    return (
        f'<div class="verdict {tone}"><div class="mark">{mark}</div><div><div class="big">{escape(big)}</div>'
        f'<div class="sub">{escape(findings)}</div></div></div>'
    )


def _cards(f: Facts) -> str:
    """Two rows: the findings (what went wrong), then the inputs and what was audited."""
    problems = sum(f.assignment[s][st] for s in SOURCES for st in ASSIGNMENT_STATUSES if st != "ok")
    audited = sum(sum(f.assignment[s].values()) for s in SOURCES)
    evaluated = len(f.expectations or [])
    findings = [
        _card("Assignment problems", problems, f"of {audited:,} audited partitions", "alert" if problems else "good"),
        _card("Offset regressions", f.regression_count, "commits below the previous one",
              "alert" if f.regression_count else "good"),
        _card("Expectations failed", f.expectations_failed if f.expectations is not None else None,
              f"of {evaluated} evaluated · {f.errors_failed} at error level" if f.expectations is not None
              else "not validated",
              "alert" if f.errors_failed else ("caution" if f.expectations_failed else "good")),
        _card("Quarantined", f.quarantined, "corrupt input parts set aside", "caution" if f.quarantined else "good"),
    ]
    inputs = [
        _card("Znodes read", f.znodes, "rows of raw/znodes"),
        _card("Offset records", f.offset_records, "commits, group metadata, other records"),
    ]
    for source in SOURCES:
        counts = f.assignment[source]
        total = sum(counts.values())
        bad = total - counts.get("ok", 0)
        ring = charts.donut([(counts.get(s, 0), charts.STATUS_COLORS[s]) for s in ASSIGNMENT_STATUSES], 46)
        inputs.append(
            _card(f"{source} partitions", total,
                  f"{counts.get('ok', 0):,} ok · {bad:,} not ok" if total else "none audited", "", ring if total else "")
        )
    return f'<div class="cards">{"".join(findings)}</div><div class="cards inputs">{"".join(inputs)}</div>'


def _section(title: str, lead: str, body: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2><p class="lead">{escape(lead)}</p>{body}</section>'


def _assignment(f: Facts) -> str:
    rows = []
    for source in SOURCES:
        chips = "".join(
            f'<span class="chip" style="background:{charts.STATUS_COLORS[s] if n else "#ced4da"}">'
            f"{escape(charts.STATUS_LABELS[s])} {n:,}</span>"
            for s in ASSIGNMENT_STATUSES
            for n in [f.assignment[source].get(s, 0)]
        )
        rows.append(f"<div><h3>{escape(source)}</h3>{chips}</div>")
    body = f'<div class="totals">{"".join(rows)}</div>'
    if not f.groups:
        body += '<div class="empty">No audited partitions in this run.</div>'
    else:
        body += charts.legend() + charts.stacked_bars(f.groups)
        if len(f.groups) > 40:
            body += f'<div class="more">… and {len(f.groups) - 40} more group(s), all shown in core/assignment_audit.</div>'
    return _section(
        "Assignment status per group",
        "Partitions per consumer group, split by the audit's verdict; groups with problems first.",
        body,
        "assignment",
    )


# Burrow's partition statuses (marts/consumer_lag_status) by tone; anything else is a warning.
_LAG_STATUS_TONE = {"ok": "pass", "notfound": "muted", "warn": "warnc", "stall": "fail", "stop": "fail",
                    "rewind": "fail", "error": "fail"}


def _lag(f: Facts) -> str:
    lead = "Latest effective commit vs. log end, summed per group; negative lag means a commit beyond the log end."
    if f.lag is None:
        return _section("Lag per group", lead, '<span class="notbuilt">marts/consumer_lag not built</span>', "lag")
    if not f.lag:
        return _section("Lag per group", lead, '<div class="empty">No committed offsets in this run.</div>', "lag")
    top = max((abs(g.total_lag) for g in f.lag), default=1) or 1
    rows = []
    for g in f.lag[:60]:
        width = 100 * abs(g.total_lag) / top
        if g.statuses is None:
            status = '<span class="notbuilt">not built</span>'
        elif not g.statuses:
            status = '<span class="chip muted">no status</span>'
        else:
            status = "".join(
                f'<span class="chip {_LAG_STATUS_TONE.get(k.lower(), "warnc")}">{escape(k)} {v}</span>'
                for k, v in sorted(g.statuses.items(), key=lambda kv: -kv[1])
            )
        if g.negative:
            status = f'<span class="chip fail">{g.negative} negative</span>' + status
        rows.append(
            f"<tr><td><b>{escape(str(g.group_id))}</b></td><td>{escape(g.source)}</td><td class='n'>{g.partitions:,}</td>"
            f"<td class='n'>{g.total_lag:,}</td>"
            f"<td style='width:22%'><div class='bar{' neg' if g.total_lag < 0 else ''}' style='width:{width:.1f}%'></div></td>"
            f"<td class='n'>{_n(g.max_lag)}</td><td class='n'>{g.unknown_end:,}</td><td>{status}</td></tr>"
        )
    more = f'<div class="more">… and {len(f.lag) - 60} more group(s).</div>' if len(f.lag) > 60 else ""
    table = (
        "<table><thead><tr><th>group</th><th>source</th><th class='n'>partitions</th><th class='n'>total lag</th>"
        "<th></th><th class='n'>max lag</th><th class='n'>end unknown</th><th>status</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{more}"
    )
    return _section("Lag per group", lead, table, "lag")


def _heatmap(f: Facts) -> str:
    lead = "Commits per UTC hour for the busiest group partitions (latest 48 hours of the data)."
    h = f.heatmap
    if h is None:
        body = '<span class="notbuilt">marts/commit_frequency not built</span>'
    elif not h.rows:
        body = '<div class="empty">No commits in this run.</div>'
    else:
        body = charts.heat_scale(max(h.cells.values(), default=0)) + charts.heatmap(h)
        if h.more_rows:
            body += f'<div class="more">… and {h.more_rows} quieter partition(s).</div>'
    return _section("Commit frequency", lead, body, "commits")


def _regressions(f: Facts) -> str:
    lead = "Effective commits lower than the previous effective commit of the same partition, largest first."
    if f.regressions is None:
        body = '<span class="notbuilt">marts/offset_regressions not built</span>'
    elif not f.regressions:
        body = '<div class="empty">No offset regressions. Every partition only moved forward.</div>'
    else:
        rows = "".join(
            f"<tr><td><b>{escape(str(r['group_id']))}</b></td><td>{escape(str(r['topic']))}</td>"
            f"<td class='n'>{_n(r['partition'])}</td><td class='n'>{_n(r['previous_committed_offset'])}</td>"
            f"<td class='n'>{_n(r['committed_offset'])}</td><td class='n'><span class='chip fail'>−{_n(r['regressed_by'])}</span></td>"
            f"<td class='n'>{_n(r['log_offset'])}</td>"
            f"<td>{escape(r['committed_at'].strftime('%Y-%m-%d %H:%M:%S')) if r['committed_at'] else '–'}</td></tr>"
            for r in f.regressions
        )
        more = (
            f'<div class="more">Showing {len(f.regressions)} of {f.regression_count:,}.</div>'
            if f.regression_count > len(f.regressions)
            else ""
        )
        body = (
            "<table><thead><tr><th>group</th><th>topic</th><th class='n'>partition</th><th class='n'>previous</th>"
            "<th class='n'>committed</th><th class='n'>regressed by</th><th class='n'>log offset</th>"
            f"<th>committed at (UTC)</th></tr></thead><tbody>{rows}</tbody></table>{more}"
        )
    return _section("Offset regressions", lead, body, "regressions")


def _quarantine(f: Facts) -> str:
    lead = "Corrupt parts of otherwise readable inputs, set aside with their position; the run went on."
    if not f.quarantine:
        body = '<div class="empty">Nothing quarantined.</div>'
    else:
        rows = "".join(
            f"<tr><td>{escape(str(q['source']))}</td><td>{escape(str(q['reason']))}</td>"
            f"<td class='n'>{q['count']:,}</td><td><code>{escape(str(q['example']))}</code></td></tr>"
            for q in f.quarantine[:50]
        )
        body = (
            "<table><thead><tr><th>source</th><th>reason</th><th class='n'>parts</th><th>first location</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
        )
    return _section("Quarantine", lead, body, "quarantine")


def _expectations(f: Facts) -> str:
    link = f'<a href="{DATA_DOCS_LINK}">Open the Great Expectations Data Docs →</a>'
    if f.expectations is None:
        return _section(
            "Expectations", "The Great Expectations suites of expectations/.",
            '<span class="notbuilt">not validated: run kaudit validate</span>', "expectations"
        )
    order = {"error": 0, "warning": 1}
    ranked = sorted(f.expectations, key=lambda e: (bool(e.get("success")), order.get(e.get("level"), 2)))
    rows = []
    for e in ranked:
        if e.get("success"):
            chip = '<span class="chip pass">pass</span>'
        elif e.get("level") == "warning":
            chip = '<span class="chip warnc">warning</span>'
        else:
            chip = '<span class="chip fail">fail</span>'
        count = e.get("unexpected_count")
        rows.append(
            f"<tr><td>{chip}</td><td><b>{escape(str(e.get('expectation')))}</b><br>"
            f"<span class='note mono'>{escape(str(e.get('suite')))}</span></td>"
            f"<td>{escape(str(e.get('level', '')))}</td><td class='n'>{_n(count)}</td>"
            f"<td>{escape(str(e.get('description', '')))}</td></tr>"
        )
    table = (
        f"<p>{link}</p><table><thead><tr><th></th><th>expectation</th><th>level</th><th class='n'>failing rows</th>"
        f"<th>what it checks</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return _section(
        "Expectations",
        f"{len(f.expectations)} evaluated, {f.expectations_failed} failed; failing rows are in "
        "validation/run_id=…/failures/.",
        table,
        "expectations",
    )


def _drift(f: Facts) -> str:
    if not f.drift:
        return ""
    rows = "".join(
        f"<tr><td><b>{escape(str(d['group_id']))}</b></td><td>{escape(str(d['topic']))}</td>"
        f"<td class='n'>{_n(d['partition'])}</td><td class='n'>{_n(d['zk_offset'])}</td>"
        f"<td class='n'>{_n(d['kafka_offset'])}</td><td class='n'>{_n(d['drift'])}</td></tr>"
        for d in f.drift[:50]
    )
    body = (
        "<table><thead><tr><th>group</th><th>topic</th><th class='n'>partition</th><th class='n'>ZooKeeper</th>"
        f"<th class='n'>Kafka</th><th class='n'>drift</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return _section(
        "Offset storage drift", "Dual-commit groups whose ZooKeeper and Kafka offsets disagree.", body, "drift"
    )


def render(f: Facts, generated: datetime | None = None) -> str:
    generated = generated or datetime.now(timezone.utc)
    body = "".join(
        [
            '<header class="top"><div><div class="eyebrow">kaudit · consumer coordination audit</div>',
            f"<h1>Audit of run {escape(f.run_id)}</h1></div>",
            f'<div class="meta">run <code>{escape(f.run_id)}</code><br>generated {generated:%Y-%m-%d %H:%M} UTC</div>',
            "</header>",
            _verdict(f),
            _cards(f),
            _assignment(f),
            _lag(f),
            _heatmap(f),
            _regressions(f),
            _drift(f),
            _quarantine(f),
            _expectations(f),
            "<footer>Generated offline by kaudit from the run's warehouse tables. "
            "Statuses follow core/assignment_audit; numbers are rows of the run's partition.</footer>",
        ]
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>kaudit report · {escape(f.run_id)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )
