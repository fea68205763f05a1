"""Inline SVG charts drawn in Python: no script, no network. Every label is escaped."""

from __future__ import annotations

import math
from html import escape

from pipelines.tables import ASSIGNMENT_STATUSES

STATUS_COLORS = {
    "ok": "#2b8a3e",
    "wrong_owner": "#e8590c",
    "unowned": "#868e96",
    "duplicate_owner": "#c92a2a",
    "unknown_owner": "#862e9c",
    "unexpected_partition": "#1864ab",
}
STATUS_LABELS = {s: s.replace("_", " ") for s in ASSIGNMENT_STATUSES}
FONT = "font-family:inherit"


def _clip(text: str, n: int) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def stacked_bars(groups, width: int = 1040, max_rows: int = 40) -> str:
    """One horizontal bar per (source, group): its partitions split by assignment status,
    lengths on one shared scale. ``groups``: GroupAssignment items, worst first."""
    shown = groups[:max_rows]
    label_w, count_w, row_h, bar_h = 300, 70, 30, 18
    plot_w = width - label_w - count_w
    biggest = max((g.total for g in shown), default=1) or 1
    height = row_h * len(shown) + 8
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="assignment status per group" style="{FONT}">'
    ]
    for i, g in enumerate(shown):
        y = i * row_h + 4
        name = f"{g.group_id}"
        out.append(
            f'<text x="{label_w - 12}" y="{y + bar_h - 4}" text-anchor="end" class="lbl">'
            f"<title>{escape(name)} ({escape(g.source)})</title>{escape(_clip(name, 34))}"
            f'<tspan class="src" dx="6">{escape(g.source)}</tspan></text>'
        )
        x = float(label_w)
        for status in ASSIGNMENT_STATUSES:
            n = g.counts.get(status, 0)
            if not n:
                continue
            w = plot_w * n / biggest
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1.5):.1f}" height="{bar_h}" rx="2" '
                f'fill="{STATUS_COLORS[status]}"><title>{escape(name)}: {n} {STATUS_LABELS[status]}</title></rect>'
            )
            if w >= 26:
                out.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + bar_h - 5}" text-anchor="middle" class="seg">{n}</text>'
                )
            x += w
        out.append(f'<text x="{x + 8:.1f}" y="{y + bar_h - 4}" class="num">{g.total}</text>')
    out.append("</svg>")
    return "".join(out)


def legend(statuses=ASSIGNMENT_STATUSES) -> str:
    items = "".join(
        f'<span class="key"><i style="background:{STATUS_COLORS[s]}"></i>{escape(STATUS_LABELS[s])}</span>'
        for s in statuses
    )
    return f'<div class="legend">{items}</div>'


def _heat_color(n: int, top: int) -> str:
    if n <= 0:
        return "#f1f3f5"
    t = math.log1p(n) / math.log1p(top) if top > 0 else 1.0
    # from a pale blue to a deep indigo
    lo, hi = (219, 228, 255), (54, 79, 199)
    r, g, b = (round(lo[k] + (hi[k] - lo[k]) * t) for k in range(3))
    return f"rgb({r},{g},{b})"


def heatmap(h, width: int = 1040) -> str:
    """Commits per hour: one row per group · topic/partition, one column per UTC hour."""
    label_w, top_h, row_h = 300, 46, 18
    cols = max(len(h.hours), 1)
    cell_w = min(36.0, (width - label_w - 10) / cols)
    height = top_h + row_h * len(h.rows) + 6
    top = max(h.cells.values(), default=0)
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="commit frequency heatmap" style="{FONT}">'
    ]
    step = max(1, math.ceil(cols / 12))
    last_day = None
    for j, hour in enumerate(h.hours):
        x = label_w + j * cell_w
        if hour.date() != last_day:  # the day above its first hour
            last_day = hour.date()
            out.append(f'<text x="{x:.1f}" y="{top_h - 24}" class="axis day">{escape(hour.strftime("%a %d %b"))}</text>')
        if j % step == 0:
            out.append(f'<text x="{x:.1f}" y="{top_h - 8}" class="axis">{hour:%H}h</text>')
    for i, row in enumerate(h.rows):
        y = top_h + i * row_h
        out.append(
            f'<text x="{label_w - 10}" y="{y + row_h - 5}" text-anchor="end" class="lbl small">'
            f"<title>{escape(row)}</title>{escape(_clip(row, 42))}</text>"
        )
        for j, hour in enumerate(h.hours):
            n = h.cells.get((i, j), 0)
            out.append(
                f'<rect x="{label_w + j * cell_w:.1f}" y="{y + 1}" width="{max(cell_w - 2, 1):.1f}" '
                f'height="{row_h - 3}" rx="2" fill="{_heat_color(n, top)}">'
                f"<title>{escape(row)} @ {hour:%Y-%m-%d %H:00} UTC: {n} commit(s)</title></rect>"
            )
    out.append("</svg>")
    return "".join(out)


def heat_scale(top: int) -> str:
    stops = [0, 1, max(top // 4, 1), max(top // 2, 1), top]
    cells = "".join(
        f'<span class="key"><i style="background:{_heat_color(n, top)}"></i>{n}</span>'
        for n in sorted(set(stops))
    )
    return f'<div class="legend">commits/hour {cells}</div>'


def donut(parts: list[tuple[int, str]], size: int = 92) -> str:
    """A small ring chart of (value, colour) parts."""
    total = sum(v for v, _ in parts)
    stroke = max(size / 8, 6)
    c = size / 2
    r = c - stroke / 2 - 1
    circ = 2 * math.pi * r
    out = [f'<svg viewBox="0 0 {size} {size}" width="{size}" height="{size}" aria-hidden="true">']
    out.append(f'<circle cx="{c}" cy="{c}" r="{r}" fill="none" stroke="#e9ecef" stroke-width="{stroke:.1f}"/>')
    offset = 0.0
    for v, colour in parts:
        if not v or not total:
            continue
        length = circ * v / total
        out.append(
            f'<circle cx="{c}" cy="{c}" r="{r}" fill="none" stroke="{colour}" stroke-width="{stroke:.1f}" '
            f'stroke-dasharray="{length:.2f} {circ - length:.2f}" stroke-dashoffset="{-offset:.2f}" '
            f'transform="rotate(-90 {c} {c})"/>'
        )
        offset += length
    out.append("</svg>")
    return "".join(out)
