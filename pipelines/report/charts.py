"""The report's charts as numbers for the templates: colours, bar lengths, heat bins, ring
arcs. No markup here: the templates draw HTML bars, a heat table and a small inline SVG ring,
so labels stay real text at any width."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pipelines.warehouse.tables import ASSIGNMENT_STATUSES

STATUS_COLORS = {
    "ok": "#2b8a3e",
    "wrong_owner": "#e8590c",
    "unowned": "#5c6473",
    "duplicate_owner": "#c92a2a",
    "unknown_owner": "#862e9c",
    "unexpected_partition": "#1864ab",
}
STATUS_LABELS = {s: s.replace("_", " ") for s in ASSIGNMENT_STATUSES}
# CONTRACT's meaning of each status, in words for a reader
STATUS_MEANINGS = {
    "duplicate_owner": "more than one consumer owns the partition",
    "unexpected_partition": "owned, but the topic has no such partition or nobody in the group subscribes to it",
    "unknown_owner": "owned by a consumer that is not registered in the group",
    "unowned": "an expected owner exists and nobody owns the partition",
    "wrong_owner": "owned by a registered consumer other than the expected one",
    "ok": "owned by exactly the expected owner",
}
# a sequential blue scale (ColorBrewer Blues 7, lightest dropped): bin i of a heat scale
HEAT_COLORS = ("#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b")
HEAT_EMPTY = "#f1f3f5"


@dataclass(frozen=True)
class HeatBin:
    low: int
    high: int
    color: str

    @property
    def label(self) -> str:
        return f"{self.low:,}" if self.low == self.high else f"{self.low:,}–{self.high:,}"


def heat_bins(top: int) -> list[HeatBin]:
    """Bins over 1..top, one colour each: every count up to 7 a bin of its own, else the
    count 1 alone and geometric bins from 2 to top (so 1 and 6 never share a colour, and
    a busy hour stays distinguishable from a very busy one)."""
    if top <= 0:
        return []
    n = len(HEAT_COLORS)
    if top <= n:
        edges = list(range(1, top + 2))
    else:
        edges = [1] + sorted({round(2 * ((top + 1) / 2) ** (k / (n - 1))) for k in range(n)})
    bounds = [(lo, hi - 1) for lo, hi in zip(edges, edges[1:], strict=False) if hi > lo]
    last = n - 1  # fewer bins than colours: spread them over the whole scale
    k = len(bounds)
    colors = [HEAT_COLORS[round(i * last / (k - 1))] for i in range(k)] if k > 1 else [HEAT_COLORS[last // 2]]
    return [HeatBin(lo, hi, c) for (lo, hi), c in zip(bounds, colors, strict=True)]


def heat_color(n: int, bins: list[HeatBin]) -> str:
    if n <= 0 or not bins:
        return HEAT_EMPTY
    for b in bins:
        if n <= b.high:
            return b.color
    return bins[-1].color


def bar_segments(counts: dict[str, int], biggest: int) -> list[dict]:
    """One group's statuses as bar segments, widths in % of the biggest group's total."""
    biggest = biggest or 1
    return [
        {"status": s, "count": counts[s], "width": 100 * counts[s] / biggest, "color": STATUS_COLORS[s]}
        for s in ASSIGNMENT_STATUSES
        if counts.get(s)
    ]


def ring(parts: list[tuple[int, str]], size: int = 46) -> dict:
    """A small ring chart of (value, colour) parts: circle geometry and one arc per part."""
    total = sum(v for v, _ in parts)
    stroke = max(size / 8, 6)
    c = size / 2
    r = c - stroke / 2 - 1
    circ = 2 * math.pi * r
    arcs, offset = [], 0.0
    for v, colour in parts:
        if not v or not total:
            continue
        length = circ * v / total
        arcs.append({"color": colour, "dash": f"{length:.2f} {circ - length:.2f}", "offset": f"{-offset:.2f}"})
        offset += length
    return {"size": size, "c": c, "r": round(r, 2), "stroke": round(stroke, 2), "arcs": arcs}
