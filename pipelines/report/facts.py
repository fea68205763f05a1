"""Everything the report says, read from the run's tables with pyarrow (``pipelines.warehouse.reading``):
plain Python values (no Spark). Missing raw/core tables are empty; a mart that was not built is
``None`` ("not built"); a table file that is not its declared schema raises."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipelines.quality.results import TABLE as VALIDATION_RESULTS
from pipelines.quality.run import VALIDATION, read_results
from pipelines.report.lag_time import LagTimeFacts, gather_lag_time
from pipelines.report.metadata import MetadataFacts, gather_metadata
from pipelines.report.migration import MigrationFacts, gather_migration
from pipelines.report.mm2 import Mm2Facts, gather_mm2
from pipelines.report.order import nulls_last
from pipelines.report.rebalances import RebalanceFacts, gather_rebalances
from pipelines.report.share_streams import ShareStreamsFacts, gather_share_streams
from pipelines.report.tiered import TieredFacts, gather_tiered
from pipelines.warehouse.reading import read_arrow, read_built, row_count
from pipelines.warehouse.tables import (
    ASSIGNMENT_STATUSES,
    CONSUMER_GROUP_FINDINGS,
    GROUP_RECORD_ORDER,
    SUMMARY_STATUS_ORDER,
)
from pipelines.warehouse.warehouse import Warehouse

SOURCES = ("zookeeper", "kafka")
OFFSET_RECORD_TABLES = ("raw/offset_commits", "raw/group_metadata", "raw/coordinator_records",
                        # one row per record (partition metadata: one per topic, left out)
                        "raw/consumer_group_metadata", "raw/consumer_group_members",
                        "raw/consumer_group_target_metadata", "raw/consumer_group_target_assignments",
                        "raw/consumer_group_current_assignments", "raw/consumer_group_regexes",
                        "raw/group_coordinator_records")
# the named findings of KIP-848 groups (core/consumer_group_findings), as the report explains them
GROUP_FINDINGS: dict[str, str] = {
    "range_target_differs": "the server's target differs from the range assignor's, recomputed",
    "uniform_partition_untargeted": "a partition of a subscribed topic is in nobody's target (uniform)",
    "uniform_partition_targeted_twice": "a partition is in two members' targets (uniform)",
    "uniform_target_not_subscribed": "a member is targeted a partition of a topic it does not subscribe to (uniform)",
    "uniform_unbalanced": "target sizes differ by more than one in a homogeneous group (uniform)",
    "epoch_order_violated": "group epoch >= assignment epoch >= member epoch does not hold",
    "partition_held_twice": "two members hold the partition outside a hand-off",
    "stable_member_off_target": "a STABLE member holds other partitions than its target",
    "unresolved_topic_id": "a topic id neither the KRaft registry nor the group's partition metadata names",
}
# Burrow's partition statuses (marts/consumer_lag_status) that make a group unhealthy, and why
BURROW_PROBLEMS = {
    "STOP": "offsets stopped while the log end moved",
    "STALL": "offsets stalled with lag",
    "REWIND": "offsets went back",
    "WARN": "lag growing",
}
# A ZooKeeper offset znode not written for this long before the partition's newest message
# (with lag) is a consumer that stopped committing: ZooKeeper consumers commit every
# auto.commit.interval.ms (60 s by default). Only one offset per partition is known, so this
# is the ZooKeeper side's counterpart of Burrow's STOP.
ZK_STOPPED_AFTER = timedelta(minutes=10)
HEATMAP_HOURS = 48
HEATMAP_ROWS = 30
# ZooKeeper consumer ids: "<group>_<host>-<ms since epoch>[-<uuid prefix>]" (ZookeeperConsumerConnector)
_CONSUMER_ID = re.compile(r"^(?P<host>.+)-(?P<ms>\d{10,14})(?:-[0-9a-fA-F]+)?$")


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
class Owner:
    """An observed owner and what its registration says: host and since when."""

    name: str
    host: str | None
    since: datetime | None  # owner znode ctime (ZooKeeper), first generation with the member (Kafka)
    registered: bool


@dataclass
class Finding:
    """One non-ok partition of core/assignment_audit."""

    source: str
    group_id: str
    topic: str
    partition: int
    broker_id: int | None
    status: str
    expected_owner: str | None
    owners: list[Owner]
    committed_offset: int | None
    log_end_offset: int | None
    lag: int | None

    @property
    def partition_label(self) -> str:
        return f"{self.broker_id}-{self.partition}" if self.broker_id is not None else str(self.partition)


@dataclass
class GroupHealth:
    """One (source, group) of marts/consumer_lag, with every reason it is unhealthy."""

    source: str
    group_id: str
    partitions: int
    known_lag: int  # summed over the partitions whose log end is known
    max_lag: int | None
    unknown_end: int
    negative: int
    live_consumers: int  # ZooKeeper registrations + Kafka members of the group id (either store)
    owned_partitions: int
    burrow: dict[str, int] | None  # partition statuses (ZooKeeper: from the replayed offset writes); None: not built
    reasons: list[str] = field(default_factory=list)

    @property
    def lag_known(self) -> bool:
        return self.unknown_end < self.partitions


@dataclass
class Heatmap:
    rows: list[str]  # "group · topic/partition"
    hours: list  # datetimes (UTC hour starts), every hour of the span, empty ones included
    cells: dict[tuple[int, int], int]  # (row, hour index) -> commits
    more_rows: int = 0
    hours_in_data: int = 0  # distinct hours of the whole mart


@dataclass
class Expectation:
    entry: dict  # the check's row of quality/validation_results (or its results.json entry)
    sample: list[dict] | None  # the first failing rows (validation/run_id=<id>/failures/<check>.parquet)
    failures_file: Path | None


@dataclass
class GroupFinding:
    """One row of core/consumer_group_findings (a KIP-848 group)."""

    source: str
    group_id: str
    member_id: str | None
    topic: str | None
    partition: int | None
    finding: str
    detail: str | None


@dataclass
class Facts:
    run_id: str
    warehouse: Path
    znodes: int
    offset_records: int
    quarantined: int
    assignment: dict[str, dict[str, int]]
    groups: list[GroupAssignment]
    findings: list[Finding]
    health: list[GroupHealth] | None
    heatmap: Heatmap | None
    regressions: list[dict] | None
    regression_count: int
    quarantine: list[dict]  # source, reason, count, example
    expectations: list[Expectation] | None
    drift: list[dict] | None = None
    metadata: MetadataFacts | None = None  # KRaft metadata (None: the run has none)
    group_findings: list[GroupFinding] = field(default_factory=list)
    lag_time: LagTimeFacts | None = None  # lag in time, data loss, resets, stuck (None: no mart built)
    rebalances: RebalanceFacts | None = None  # rebalance history (None: the run has none)
    zk_history: dict | None = None  # the span of the ZooKeeper data dir's history (None: no data dir read)
    mm2: Mm2Facts | None = None  # MirrorMaker 2 failover readiness (None: the run has none)
    share_streams: ShareStreamsFacts | None = None  # share and Streams groups (None: the run has none)
    migration: MigrationFacts | None = None  # the ZooKeeper-to-KRaft migration (None: the run has none)
    tiered: TieredFacts | None = None  # tiered storage's remote segments (None: the run read none)

    @property
    def audited(self) -> int:
        return sum(sum(v.values()) for v in self.assignment.values())

    @property
    def empty(self) -> bool:
        """Nothing was extracted or audited for the run."""
        return not (self.znodes or self.offset_records or self.audited or self.group_findings or self.share_streams
                    or self.mm2)

    @property
    def unhealthy(self) -> list[GroupHealth]:
        return [g for g in self.health or [] if g.reasons]

    @property
    def expectations_evaluated(self) -> int:
        """Checks that were judged (a check without data has ``success`` null: neither)."""
        return sum(1 for e in self.expectations or [] if e.entry.get("success") is not None)

    @property
    def expectations_failed(self) -> int:
        return sum(1 for e in self.expectations or [] if e.entry.get("success") is False)

    @property
    def errors_failed(self) -> int:
        return sum(
            1
            for e in self.expectations or []
            if e.entry.get("success") is False and e.entry.get("level", "error") == "error"
        )

    def summary(self) -> dict:
        """``summary.json`` exactly as CONTRACT.md shapes it."""
        return {
            "run_id": self.run_id,
            "inputs": {"znodes": self.znodes, "offset_records": self.offset_records, "quarantined": self.quarantined},
            "assignment": {s: {k: self.assignment[s][k] for k in SUMMARY_STATUS_ORDER} for s in SOURCES},
            "offset_regressions": self.regression_count,
            "expectations": {"evaluated": self.expectations_evaluated, "failed": self.expectations_failed},
            **({"history": {k: v.isoformat() if isinstance(v, datetime) else v
                            for k, v in self.zk_history.items() if k != "cuts"}} if self.zk_history else {}),
        }


def zk_history(wh: Warehouse, run_id: str) -> dict | None:
    """What ``extract zk-snapshot`` replayed into raw/znode_changes: the first and last txn's
    times, the zxids, txns and snapshots it spans, the cuts in its chain (None: no data dir)."""
    h = wh.read_meta(run_id, "extract_zk_snapshot").get("history")
    if not h:
        return None

    def at(ms):
        return datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None

    return {"from": at(h.get("first_txn_ms")), "to": at(h.get("last_txn_ms")), "txns": h.get("txns"),
            "snapshots": h.get("snapshots"), "start_zxid": h.get("start_zxid"), "end_zxid": h.get("end_zxid"),
            "cuts": h.get("cuts") or []}


def _rows(wh: Warehouse, table: str, run_id: str) -> int:
    return row_count(wh, table, run_id) or 0


def _read(wh: Warehouse, table: str, run_id: str, columns: list[str], filter=None) -> pa.Table:
    """Some columns of a raw/core partition (empty with those columns when it does not exist)."""
    return read_arrow(wh, table, run_id, columns, filter, with_run_id=False)


def _mart(wh: Warehouse, name: str, run_id: str) -> pa.Table | None:
    """The run's mart ``name`` (its contract's columns), None when it was not built for the run."""
    return read_built(wh, f"marts/{name}", run_id)


def _assignment(audit: pa.Table) -> tuple[dict[str, dict[str, int]], list[GroupAssignment]]:
    totals = {s: dict.fromkeys(ASSIGNMENT_STATUSES, 0) for s in SOURCES}
    per_group: dict[tuple[str, str], Counter] = defaultdict(Counter)
    if audit.num_rows:
        counts = audit.group_by(["source", "group_id", "status"]).aggregate([([], "count_all")])
        for r in counts.to_pylist():
            source, status = r["source"], r["status"]
            totals.setdefault(source, dict.fromkeys(ASSIGNMENT_STATUSES, 0))
            totals[source][status] = totals[source].get(status, 0) + r["count_all"]
            per_group[(source, r["group_id"])][status] += r["count_all"]
    groups = [GroupAssignment(s, g, dict(c)) for (s, g), c in per_group.items()]
    groups.sort(key=lambda g: nulls_last(-g.problems, -g.total, g.source, g.group_id))
    return totals, groups


def _zk_host(group_id: str, owner: str) -> str | None:
    """The host in a ZooKeeper owner name ``<group>_<host>-<ms>[-<uuid>]-<thread>``."""
    consumer = owner.rsplit("-", 1)[0]
    if consumer.startswith(f"{group_id}_"):
        consumer = consumer[len(group_id) + 1 :]
    m = _CONSUMER_ID.match(consumer)
    return m["host"] if m else None


def _zk_owners(wh: Warehouse, run_id: str, groups: set[str]) -> tuple[dict, set]:
    """(group, topic, partition name, owner) -> owner znode ctime, and the registered
    (group, consumer id) pairs."""
    znodes = _read(
        wh, "raw/znodes", run_id, ["path", "data", "ctime"],
        filter=pc.match_substring_regex(ds.field("path"), r"^/consumers/[^/]+/owners/[^/]+/[^/]+$"),
    )
    ctimes = {}
    for r in znodes.to_pylist():
        _, _, group, _, topic, part = r["path"].split("/", 5)
        if group in groups and r["data"] is not None:
            ctimes[(group, topic, part, r["data"].decode("utf-8", "replace").strip())] = r["ctime"]
    regs = _read(wh, "core/consumer_registrations", run_id, ["group_id", "consumer_id"])
    registered = {(r["group_id"], r["consumer_id"]) for r in regs.to_pylist()}
    return ctimes, registered


def _kafka_members(wh: Warehouse, run_id: str) -> tuple[dict, dict]:
    """(group, member) -> (client host, first state_timestamp seen with the member), and
    group -> members of its latest generation record (empty after a tombstone)."""
    meta = _read(wh, "raw/group_metadata", run_id,
                 ["group_id", "offsets_partition", "log_offset", "state_timestamp", "is_tombstone"])
    members = _read(wh, "raw/group_members", run_id, ["group_id", "offsets_partition", "log_offset", "member_id",
                                                       "client_host"])
    at = {(r["group_id"], r["offsets_partition"], r["log_offset"]): r for r in meta.to_pylist()}
    latest = {r["group_id"]: (r["group_id"], r["offsets_partition"], r["log_offset"])
              for r in _latest(list(at.values()), "group_id")}  # a group whose latest record is a tombstone: none
    info: dict[tuple[str, str], tuple] = {}
    current: dict[str, set] = defaultdict(set)
    for r in sorted(members.to_pylist(), key=lambda r: nulls_last(r["offsets_partition"], r["log_offset"])):
        key = (r["group_id"], r["offsets_partition"], r["log_offset"])
        stamp = at[key]["state_timestamp"] if key in at else None
        host, since = info.get((r["group_id"], r["member_id"]), (None, None))
        info[(r["group_id"], r["member_id"])] = (r["client_host"] or host, since or stamp)
        if latest.get(r["group_id"]) == key:
            current[r["group_id"]].add(r["member_id"])
    for group, member, host in _kip848_members(wh, run_id):
        info[(group, member)] = (host, None)
        current[group].add(member)
    return info, current


def _latest(rows: list[dict], *key: str) -> list[dict]:
    """The latest of ``rows`` (``GROUP_RECORD_ORDER``) for each ``key``, unless it is a tombstone."""
    last: dict[tuple, dict] = {}
    for r in sorted(rows, key=lambda r: nulls_last(*(r[c] for c in GROUP_RECORD_ORDER))):
        last[tuple(r[k] for k in key)] = r
    return [r for r in last.values() if not r["is_tombstone"]]


def _kip848_members(wh: Warehouse, run_id: str) -> list[tuple[str, str, str | None]]:
    """(group, member, client host) of the current members of the live KIP-848 groups (the
    rule of ``pipelines.spark.assignment_kip848.current_members``)."""
    place = ["is_tombstone", *GROUP_RECORD_ORDER]
    groups = _read(wh, "raw/consumer_group_metadata", run_id, ["group_id", *place]).to_pylist()
    live = {r["group_id"] for r in _latest(groups, "group_id")}
    members = _read(wh, "raw/consumer_group_members", run_id, ["group_id", "member_id", "client_host", *place])
    return [(r["group_id"], r["member_id"], r["client_host"])
            for r in _latest(members.to_pylist(), "group_id", "member_id") if r["group_id"] in live]


def _lag_index(lag: pa.Table | None) -> dict[tuple, dict]:
    if lag is None:
        return {}
    return {
        (r["source"], r["group_id"], r["topic"], r["partition"], r["broker_id"]): r
        for r in lag.select(["source", "group_id", "topic", "partition", "broker_id", "committed_offset",
                             "log_end_offset", "lag"]).to_pylist()
    }


def _findings(wh: Warehouse, run_id: str, audit: pa.Table, lag: dict, kafka_info: dict,
              kafka_current: dict) -> list[Finding]:
    bad = audit.filter(pc.not_equal(audit.column("status"), "ok")).to_pylist() if audit.num_rows else []
    ctimes, registered = _zk_owners(wh, run_id, {r["group_id"] for r in bad if r["source"] == "zookeeper"})
    severity = {s: i for i, s in enumerate(ASSIGNMENT_STATUSES)}
    out = []
    for r in bad:
        part = f"{r['broker_id']}-{r['partition']}" if r["broker_id"] is not None else str(r["partition"])
        owners = []
        for name in dict.fromkeys(o for o in r["observed_owners"] or [] if o is not None):
            if r["source"] == "zookeeper":
                since = ctimes.get((r["group_id"], r["topic"], part, name))
                known = (r["group_id"], name.rsplit("-", 1)[0]) in registered  # "<consumer id>-<thread>"
                owners.append(Owner(name, _zk_host(r["group_id"], name), since, known))
            else:
                host, since = kafka_info.get((r["group_id"], name), (None, None))
                owners.append(Owner(name, host, since, name in kafka_current.get(r["group_id"], ())))
        offsets = lag.get((r["source"], r["group_id"], r["topic"], r["partition"], r["broker_id"]), {})
        out.append(Finding(r["source"], r["group_id"], r["topic"], r["partition"], r["broker_id"], r["status"],
                           r["expected_owner"], owners, offsets.get("committed_offset"),
                           offsets.get("log_end_offset"), offsets.get("lag")))
    out.sort(key=lambda f: nulls_last(severity.get(f.status, 99), f.source, f.group_id, f.topic, f.broker_id,
                                      f.partition))
    return out


def _health(wh: Warehouse, run_id: str, lag: pa.Table | None, status: pa.Table | None,
            kafka_current: dict) -> list[GroupHealth] | None:
    if lag is None:
        return None
    regs = _read(wh, "core/consumer_registrations", run_id, ["group_id", "consumer_id"])
    live: Counter = Counter({g: len(m) for g, m in kafka_current.items()})
    for g, _ in {(r["group_id"], r["consumer_id"]) for r in regs.to_pylist()}:
        live[g] += 1
    owners = _read(wh, "core/partition_owners", run_id, ["group_id"]).to_pylist()
    owned: Counter = Counter(r["group_id"] for r in owners)
    assignments = _read(wh, "raw/group_assignments", run_id, ["group_id", "member_id"]).to_pylist()
    for r in assignments:
        if r["member_id"] in kafka_current.get(r["group_id"], ()):
            owned[r["group_id"]] += 1
    newest = {(r["topic"], r["partition"]): r["max_timestamp"]
              for r in _read(wh, "raw/log_end_offsets", run_id, ["topic", "partition", "max_timestamp"]).to_pylist()}
    burrow: dict[tuple, Counter] | None = None
    if status is not None:
        burrow = defaultdict(Counter)
        for r in status.select(["source", "group_id", "status"]).to_pylist():
            if r["status"] is not None:
                burrow[(r["source"], r["group_id"])][r["status"]] += 1

    by_group: dict[tuple, list[dict]] = defaultdict(list)
    for r in lag.to_pylist():
        by_group[(r["source"], r["group_id"])].append(r)
    out = []
    for (source, group), rows in by_group.items():
        lags = [r["lag"] for r in rows if r["lag"] is not None]
        h = GroupHealth(
            source=source, group_id=group, partitions=len(rows), known_lag=sum(lags),
            max_lag=max(lags) if lags else None, unknown_end=len(rows) - len(lags),
            negative=sum(1 for v in lags if v < 0), live_consumers=live.get(group, 0),
            owned_partitions=owned.get(group, 0),
            burrow=dict(burrow.get((source, group), {})) if burrow is not None else None,
        )
        if h.known_lag > 0 and not h.live_consumers and not h.owned_partitions:
            h.reasons.append(f"{h.known_lag:,} messages behind and no live consumer or owner")
        for st, why in BURROW_PROBLEMS.items():
            if h.burrow and h.burrow.get(st):
                h.reasons.append(f"Burrow {st} on {h.burrow[st]} of {h.partitions} partition(s): {why}")
        if source == "zookeeper":
            stopped = [r for r in rows if r["lag"] and r["lag"] > 0 and r["committed_at"] is not None
                       and newest.get((r["topic"], r["partition"])) is not None
                       and newest[(r["topic"], r["partition"])] - r["committed_at"] > ZK_STOPPED_AFTER]
            if stopped:
                gap = max(newest[(r["topic"], r["partition"])] - r["committed_at"] for r in stopped)
                h.reasons.append(f"offsets stopped while the log end moved on {len(stopped)} partition(s): last "
                                 f"commit up to {_duration(gap)} before the newest message")
        if h.unknown_end:
            h.reasons.append(
                f"log end unknown for {h.unknown_end} of {h.partitions} partition(s): their lag is unknown"
            )
        if h.negative:
            h.reasons.append(f"committed beyond the log end on {h.negative} partition(s)")
        out.append(h)
    out.sort(key=lambda g: nulls_last(not g.reasons, -g.known_lag, g.source, g.group_id))
    return out


def _duration(d: timedelta) -> str:
    minutes = int(d.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 48 else f"{hours // 24} days"


def _heatmap(freq: pa.Table | None) -> Heatmap | None:
    """The busiest partitions over the latest HEATMAP_HOURS hours of the data, every hour of
    that span a column (aggregated with pyarrow first: the mart can be large)."""
    if freq is None:
        return None
    key = ["group_id", "topic", "partition"]
    freq = freq.filter(pc.is_valid(freq.column("window_start"))).select([*key, "window_start", "commits"])
    # the mart's windows start on the hour; the heat map's columns are hours whatever a row says
    freq = freq.set_column(3, "window_start", pc.floor_temporal(freq.column("window_start"), unit="hour"))
    if freq.num_rows == 0:
        return Heatmap([], [], {})
    distinct = pc.unique(freq.column("window_start"))
    last = pc.max(distinct).as_py()
    first = max(pc.min(distinct).as_py(), last - timedelta(hours=HEATMAP_HOURS - 1))
    hours = [first + timedelta(hours=i) for i in range(int((last - first) / timedelta(hours=1)) + 1)]
    start = pa.scalar(first, freq.schema.field("window_start").type)
    freq = freq.filter(pc.greater_equal(freq.column("window_start"), start))
    totals = freq.group_by(key).aggregate([("commits", "sum")]).to_pylist()
    totals.sort(key=lambda r: nulls_last(-(r["commits_sum"] or 0), r["group_id"], r["topic"], r["partition"]))
    shown = [(r["group_id"], r["topic"], r["partition"]) for r in totals[:HEATMAP_ROWS]]
    row_of = {k: i for i, k in enumerate(shown)}
    index = {h: i for i, h in enumerate(hours)}
    cells: Counter = Counter()
    wanted = pa.Table.from_pylist([dict(zip(key, k, strict=True)) for k in shown], schema=freq.select(key).schema)
    for r in freq.join(wanted, key, join_type="inner").to_pylist():
        cells[(row_of[(r["group_id"], r["topic"], r["partition"])], index[r["window_start"]])] += r["commits"] or 0
    labels = [f"{g} · {t}/{p}" for g, t, p in shown]
    return Heatmap(labels, hours, dict(cells), more_rows=len(totals) - len(shown), hours_in_data=len(distinct))


def _quarantine(q: pa.Table) -> list[dict]:
    groups: dict[tuple, dict] = {}
    for r in q.select(["source", "location", "reason"]).to_pylist():
        key = (r["source"], r["reason"])
        g = groups.setdefault(key, {"source": r["source"], "reason": r["reason"], "count": 0, "example": r["location"]})
        g["count"] += 1
    return sorted(groups.values(), key=lambda g: nulls_last(-g["count"], g["source"], g["reason"]))


def _validation_entries(wh: Warehouse, run_id: str) -> list[dict] | None:
    """The run's checks: the rows of ``quality/validation_results``, or the entries of results.json
    for a run validated before that table was written; None when the run was not validated."""
    table = read_built(wh, VALIDATION_RESULTS, run_id)
    return table.to_pylist() if table is not None else read_results(wh, run_id)


def _expectations(wh: Warehouse, run_id: str, sample_rows: int = 5) -> list[Expectation] | None:
    entries = _validation_entries(wh, run_id)
    if entries is None:
        return None
    failures = wh.partition_dir(VALIDATION, run_id) / "failures"
    out = []
    for e in entries:
        path = failures / f"{e.get('expectation')}.parquet"
        sample = None
        if not e.get("success") and path.is_file():
            rows = pq.ParquetFile(path)
            sample = next(rows.iter_batches(batch_size=sample_rows)).to_pylist() if rows.metadata.num_rows else []
        out.append(Expectation(e, sample, path if path.is_file() else None))
    order = {"error": 0, "warning": 1}
    out.sort(key=lambda x: (bool(x.entry.get("success")), order.get(x.entry.get("level"), 2)))
    return out


def _group_findings(wh: Warehouse, run_id: str) -> list[GroupFinding]:
    rows = read_arrow(wh, "core/consumer_group_findings", run_id, with_run_id=False).to_pylist()
    order = {name: i for i, name in enumerate(CONSUMER_GROUP_FINDINGS)}
    out = [GroupFinding(**r) for r in rows]
    out.sort(key=lambda g: nulls_last(order.get(g.finding, 99), g.group_id, g.topic, g.partition, g.member_id))
    return out


def gather(wh: Warehouse, run_id: str, max_regressions: int = 50) -> Facts:
    audit = read_arrow(wh, "core/assignment_audit", run_id)
    totals, groups = _assignment(audit)
    lag_t = _mart(wh, "consumer_lag", run_id)
    kafka_info, kafka_current = _kafka_members(wh, run_id)
    regressions_t = _mart(wh, "offset_regressions", run_id)
    regressions = None
    if regressions_t is not None:
        regressions = regressions_t.sort_by([("regressed_by", "descending")]).slice(0, max_regressions).to_pylist()
    drift_t = _mart(wh, "offset_storage_drift", run_id)
    drift = None
    if drift_t is not None:
        drift = drift_t.filter(pc.fill_null(pc.not_equal(drift_t.column("drift"), 0), True)).to_pylist()
    return Facts(
        run_id=run_id,
        warehouse=wh.root,
        znodes=_rows(wh, "raw/znodes", run_id),
        offset_records=sum(_rows(wh, t, run_id) for t in OFFSET_RECORD_TABLES),
        quarantined=_rows(wh, "raw/quarantine", run_id),
        assignment=totals,
        groups=groups,
        findings=_findings(wh, run_id, audit, _lag_index(lag_t), kafka_info, kafka_current),
        health=_health(wh, run_id, lag_t, _mart(wh, "consumer_lag_status", run_id), kafka_current),
        heatmap=_heatmap(_mart(wh, "commit_frequency", run_id)),
        regressions=regressions,
        regression_count=regressions_t.num_rows if regressions_t is not None else 0,
        quarantine=_quarantine(read_arrow(wh, "raw/quarantine", run_id)),
        expectations=_expectations(wh, run_id),
        drift=drift,
        metadata=gather_metadata(wh, run_id, _read),
        group_findings=_group_findings(wh, run_id),
        lag_time=gather_lag_time(wh, run_id),
        rebalances=gather_rebalances(wh, run_id, _read),
        zk_history=zk_history(wh, run_id),
        mm2=gather_mm2(wh, run_id),
        share_streams=gather_share_streams(wh, run_id),
        migration=gather_migration(wh, run_id),
        tiered=gather_tiered(wh, run_id),
    )
