"""Everything the report says, read from the run's tables with pyarrow: plain Python values
(no Spark). Missing tables are empty; a mart that was not built is ``None`` ("not built")."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.quality.marts import read_mart
from pipelines.quality.run import read_results
from pipelines.tables import ASSIGNMENT_STATUSES
from pipelines.warehouse import Warehouse

SOURCES = ("zookeeper", "kafka")
# CONTRACT's order of the statuses in summary.json
SUMMARY_STATUS_ORDER = ("ok", "wrong_owner", "unowned", "duplicate_owner", "unknown_owner", "unexpected_partition")
OFFSET_RECORD_TABLES = ("raw/offset_commits", "raw/group_metadata", "raw/coordinator_records")


@dataclass
class GroupAssignment:
    source: str
    group_id: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def problems(self) -> int:
        return self.total - self.counts.get("ok", 0)


@dataclass
class GroupLag:
    source: str
    group_id: str
    partitions: int
    total_lag: int
    max_lag: int | None
    unknown_end: int
    negative: int
    statuses: dict[str, int] | None  # None: consumer_lag_status not built


@dataclass
class Heatmap:
    rows: list[str]  # "group · topic/partition"
    hours: list  # datetimes (UTC hour starts)
    cells: dict[tuple[int, int], int]  # (row, hour index) -> commits
    more_rows: int = 0


@dataclass
class Facts:
    run_id: str
    znodes: int
    offset_records: int
    quarantined: int
    assignment: dict[str, dict[str, int]]
    groups: list[GroupAssignment]
    lag: list[GroupLag] | None
    heatmap: Heatmap | None
    regressions: list[dict] | None
    regression_count: int
    quarantine: list[dict]  # source, reason, count, example
    expectations: list[dict] | None
    drift: list[dict] | None = None
    missing: list[str] = field(default_factory=list)

    @property
    def expectations_failed(self) -> int:
        return sum(1 for e in self.expectations or [] if not e.get("success"))

    @property
    def errors_failed(self) -> int:
        return sum(1 for e in self.expectations or [] if not e.get("success") and e.get("level", "error") == "error")

    def summary(self) -> dict:
        """``summary.json`` exactly as CONTRACT.md shapes it."""
        return {
            "run_id": self.run_id,
            "inputs": {"znodes": self.znodes, "offset_records": self.offset_records, "quarantined": self.quarantined},
            "assignment": {s: {k: self.assignment[s][k] for k in SUMMARY_STATUS_ORDER} for s in SOURCES},
            "offset_regressions": self.regression_count,
            "expectations": {"evaluated": len(self.expectations or []), "failed": self.expectations_failed},
        }


def _rows(wh: Warehouse, table: str, run_id: str) -> int:
    part = wh.partition_dir(table, run_id)
    if not part.is_dir():
        return 0
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(part.glob("*.parquet")))


def _assignment(audit: pa.Table) -> tuple[dict[str, dict[str, int]], list[GroupAssignment]]:
    totals = {s: {status: 0 for status in ASSIGNMENT_STATUSES} for s in SOURCES}
    per_group: dict[tuple[str, str], Counter] = defaultdict(Counter)
    if audit.num_rows:
        counts = audit.group_by(["source", "group_id", "status"]).aggregate([([], "count_all")])
        for r in counts.to_pylist():
            source, status = r["source"], r["status"]
            totals.setdefault(source, {s: 0 for s in ASSIGNMENT_STATUSES})
            totals[source][status] = totals[source].get(status, 0) + r["count_all"]
            per_group[(source, r["group_id"])][status] += r["count_all"]
    groups = [GroupAssignment(s, g, dict(c)) for (s, g), c in per_group.items()]
    groups.sort(key=lambda g: (-g.problems, -g.total, g.source, str(g.group_id)))
    return totals, groups


def _lag(lag: pa.Table | None, status: pa.Table | None) -> list[GroupLag] | None:
    if lag is None:
        return None
    statuses: dict[tuple, Counter] | None = None
    if status is not None and status.column("status").null_count < status.num_rows:
        statuses = defaultdict(Counter)
        has_source = "source" in status.column_names and status.column("source").null_count < status.num_rows
        for r in status.select([c for c in ("source", "group_id", "status") if c in status.column_names]).to_pylist():
            # without a source column the statuses are Burrow's, of Kafka-committed partitions
            key = (r.get("source"), r["group_id"]) if has_source else ("kafka", r["group_id"])
            statuses[key][str(r["status"])] += 1
    out = []
    by_group: dict[tuple, list[dict]] = defaultdict(list)
    for r in lag.select(["source", "group_id", "lag", "log_end_offset"]).to_pylist():
        by_group[(r["source"], r["group_id"])].append(r)
    for (source, group), rows in by_group.items():
        lags = [r["lag"] for r in rows if r["lag"] is not None]
        group_status = None
        if statuses is not None:
            group_status = dict(statuses.get((source, group)) or {})
        out.append(
            GroupLag(
                source=source or "",
                group_id=group,
                partitions=len(rows),
                total_lag=sum(lags),
                max_lag=max(lags) if lags else None,
                unknown_end=sum(1 for r in rows if r["lag"] is None),
                negative=sum(1 for v in lags if v < 0),
                statuses=group_status,
            )
        )
    out.sort(key=lambda g: (-g.negative, -g.total_lag, str(g.group_id)))
    return out


def _heatmap(freq: pa.Table | None, max_rows: int = 30, max_hours: int = 48) -> Heatmap | None:
    """The busiest ``max_rows`` (group, topic, partition) over the latest ``max_hours`` hours
    of the data (aggregated with pyarrow first: the mart can be large)."""
    if freq is None:
        return None
    key = ["group_id", "topic", "partition"]
    freq = freq.filter(pc.is_valid(freq.column("window_start"))).select([*key, "window_start", "commits"])
    if freq.num_rows == 0:
        return Heatmap([], [], {})
    hours = sorted(pc.unique(freq.column("window_start")).to_pylist())[-max_hours:]
    freq = freq.filter(pc.greater_equal(freq.column("window_start"), pa.scalar(hours[0], freq.schema.field("window_start").type)))
    totals = freq.group_by(key).aggregate([("commits", "sum")]).to_pylist()
    totals.sort(key=lambda r: (-(r["commits_sum"] or 0), str(r["group_id"]), str(r["topic"]), r["partition"] if r["partition"] is not None else -1))
    shown = [(r["group_id"], r["topic"], r["partition"]) for r in totals[:max_rows]]
    row_of = {k: i for i, k in enumerate(shown)}
    index = {h: i for i, h in enumerate(hours)}
    cells: Counter = Counter()
    wanted = pa.Table.from_pylist([dict(zip(key, k)) for k in shown], schema=freq.select(key).schema)
    for r in freq.join(wanted, key, join_type="inner").to_pylist():
        cells[(row_of[(r["group_id"], r["topic"], r["partition"])], index[r["window_start"]])] += r["commits"] or 0
    labels = [f"{g} · {t}/{p}" for g, t, p in shown]
    return Heatmap(labels, hours, dict(cells), more_rows=len(totals) - len(shown))


def _quarantine(q: pa.Table) -> list[dict]:
    groups: dict[tuple, dict] = {}
    for r in q.select(["source", "location", "reason"]).to_pylist():
        key = (r["source"], r["reason"])
        g = groups.setdefault(key, {"source": r["source"], "reason": r["reason"], "count": 0, "example": r["location"]})
        g["count"] += 1
    return sorted(groups.values(), key=lambda g: (-g["count"], str(g["source"]), str(g["reason"])))


def gather(wh: Warehouse, run_id: str, max_regressions: int = 50) -> Facts:
    audit = wh.read_table("core/assignment_audit", run_id)
    totals, groups = _assignment(audit)
    regressions_t = read_mart(wh, "offset_regressions", run_id)
    regressions = None
    if regressions_t is not None:
        top = regressions_t.sort_by([("regressed_by", "descending")]).slice(0, max_regressions)
        regressions = top.select(
            ["group_id", "topic", "partition", "log_offset", "previous_committed_offset", "committed_offset",
             "regressed_by", "committed_at"]
        ).to_pylist()
    drift_t = read_mart(wh, "offset_storage_drift", run_id)
    drift = None
    if drift_t is not None:
        drift = drift_t.filter(pc.fill_null(pc.not_equal(drift_t.column("drift"), 0), False)).to_pylist()
    missing = [
        t for t in ("raw/znodes", "raw/offset_commits", "core/assignment_audit")
        if not wh.exists(t, run_id)
    ]
    return Facts(
        run_id=run_id,
        znodes=_rows(wh, "raw/znodes", run_id),
        offset_records=sum(_rows(wh, t, run_id) for t in OFFSET_RECORD_TABLES),
        quarantined=_rows(wh, "raw/quarantine", run_id),
        assignment=totals,
        groups=groups,
        lag=_lag(read_mart(wh, "consumer_lag", run_id), read_mart(wh, "consumer_lag_status", run_id)),
        heatmap=_heatmap(read_mart(wh, "commit_frequency", run_id)),
        regressions=regressions,
        regression_count=regressions_t.num_rows if regressions_t is not None else 0,
        quarantine=_quarantine(wh.read_table("raw/quarantine", run_id)),
        expectations=read_results(wh, run_id),
        drift=drift,
        missing=missing,
    )
