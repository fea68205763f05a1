"""What the report says about MirrorMaker 2 failover readiness: per replication pair (source and
target cluster aliases), each group's partitions with the source offset, MirrorMaker's
translation, what the target holds and what a failover now does (records re-read or skipped),
and the audit's findings. Read with pyarrow from ``core/mm2_failover`` and ``core/mm2_findings``
(docs/clusters.md)."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.report.order import nulls_last
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse

MAX_ROWS = 200  # partitions shown per pair; the tables have them all


@dataclass
class Mm2Facts:
    pairs: list[dict]  # source_alias, target_alias, rows, findings, reread, skipped, groups
    max_rows: int = MAX_ROWS

    @property
    def findings(self) -> int:
        return sum(len(p["findings"]) for p in self.pairs)


def _key(r: dict) -> tuple:
    return nulls_last(r["group_id"], r["topic"], r["partition"])


def gather_mm2(wh: Warehouse, run_id: str) -> Mm2Facts | None:
    """The run's MirrorMaker 2 facts; None when it has no failover rows."""
    rows = read_arrow(wh, "core/mm2_failover", run_id, with_run_id=False).to_pylist()
    if not rows:
        return None
    found = read_arrow(wh, "core/mm2_findings", run_id, with_run_id=False).to_pylist()
    pairs = []
    for s, t in sorted({(r["source_alias"], r["target_alias"]) for r in rows}, key=lambda p: nulls_last(*p)):
        mine = sorted((r for r in rows if (r["source_alias"], r["target_alias"]) == (s, t)), key=_key)
        flagged = {}
        for f in found:
            if (f["source_alias"], f["target_alias"]) == (s, t):
                flagged.setdefault(_key(f), []).append(f["finding"])
        for r in mine:
            r["findings"] = sorted(flagged.get(_key(r), []), key=nulls_last)
        pairs.append(dict(
            source_alias=s, target_alias=t, rows=mine,
            findings=sorted((f for f in found if (f["source_alias"], f["target_alias"]) == (s, t)),
                            key=lambda f: (*nulls_last(f["finding"]), *_key(f))),
            reread=sum(r["records_reread"] or 0 for r in mine),
            skipped=sum(r["records_skipped"] or 0 for r in mine),
            groups=len({r["group_id"] for r in mine}),
        ))
    return Mm2Facts(pairs)
