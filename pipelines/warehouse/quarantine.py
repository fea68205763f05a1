"""``raw/quarantine``: its rows, built here by every producer (the extractors in Python, the
registry parsers in Spark), and what a step put there, as the lines the command line shows
after an extract (the count by reason, then the first few parts with file:byte and reason).

A row is ``source`` (the producer: ``offsets``, ``log-end``, ``zk-live``, ``zk-snapshot``,
``kraft``, ``registry``), ``location`` (``file:byte``, or a znode path), ``reason`` (an error
as ``<ErrorClass>: <message>``) and ``raw`` (the bad bytes, when kept)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from pipelines import arrow
from pipelines.warehouse.tables import RAW_QUARANTINE
from pipelines.warehouse.warehouse import Warehouse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SHOWN = 5  # parts listed one by one
_KIND = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): ")


def at(path: str | Path, pos: int) -> str:
    """The location of a part of a file: ``<file>:<byte position>``."""
    return f"{path}:{pos}"


def reason(err: BaseException | str) -> str:
    """The reason of a row: an error as ``<ErrorClass>: <message>``, a text as it is."""
    return f"{type(err).__name__}: {err}" if isinstance(err, BaseException) else err


def row(source: str, location: str, err: BaseException | str, raw: bytes | None = None) -> dict:
    """One ``raw/quarantine`` row."""
    return {"source": source, "location": location, "reason": reason(err), "raw": raw}


def table(rows: list[dict]) -> pa.Table:
    """Rows of :func:`row` as a ``raw/quarantine`` table."""
    return arrow.pylist_table(rows, RAW_QUARANTINE)


def spark_rows(bad: DataFrame, source: str, location: str, err: str, raw: str) -> DataFrame:
    """The ``raw/quarantine`` rows of a Spark frame: its columns ``location``, ``err`` (a reason
    already) and ``raw``, from producer ``source``."""
    from pyspark.sql import functions as F

    columns = {"source": F.lit(source), "location": F.col(location), "reason": F.col(err), "raw": F.col(raw)}
    return bad.select(*[columns[name].alias(name) for name in RAW_QUARANTINE.names])


def reason_kind(text: str) -> str:
    """The error class a reason starts with (``CrcMismatch: ...`` -> ``CrcMismatch``), else the reason."""
    m = _KIND.match(text)
    return m.group(1) if m else text


def step_lines(warehouse: Warehouse, run_id: str, step: str, label: str, shown: int = SHOWN) -> list[str]:
    """Lines about the quarantine rows ``step`` wrote for ``run_id`` (none when it wrote none)."""
    rows = warehouse.read_step("raw/quarantine", run_id, step).select(["location", "reason"]).to_pylist()
    if not rows:
        return []
    kinds = Counter(reason_kind(r["reason"] or "") for r in rows)
    lines = [f"{label}: {len(rows)} part(s) quarantined in raw/quarantine: "
             + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())]
    lines += [f"  {r['location']}: {r['reason']}" for r in rows[:shown]]
    if len(rows) > shown:
        lines.append(f"  ... and {len(rows) - shown} more")
    return lines
