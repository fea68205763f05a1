"""What a step put in ``raw/quarantine``, as the lines the command line shows after an extract:
the count by reason, then the first few parts with file:byte and reason."""

from __future__ import annotations

import re
from collections import Counter

import pyarrow.parquet as pq

from pipelines.warehouse import Warehouse

SHOWN = 5  # parts listed one by one
_KIND = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): ")


def reason_kind(reason: str) -> str:
    """The error class a reason starts with (``CrcMismatch: ...`` -> ``CrcMismatch``), else the reason."""
    m = _KIND.match(reason)
    return m.group(1) if m else reason


def step_lines(warehouse: Warehouse, run_id: str, step: str, label: str, shown: int = SHOWN) -> list[str]:
    """Lines about the quarantine rows ``step`` wrote for ``run_id`` (none when it wrote none)."""
    path = warehouse.partition_dir("raw/quarantine", run_id) / f"part-{step}.parquet"
    if not path.is_file():
        return []
    rows = pq.read_table(path, columns=["location", "reason"]).to_pylist()
    if not rows:
        return []
    kinds = Counter(reason_kind(r["reason"] or "") for r in rows)
    lines = [f"{label}: {len(rows)} part(s) quarantined in raw/quarantine: "
             + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())]
    lines += [f"  {r['location']}: {r['reason']}" for r in rows[:shown]]
    if len(rows) > shown:
        lines.append(f"  ... and {len(rows) - shown} more")
    return lines
