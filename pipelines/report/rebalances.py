"""What the report says about the groups' rebalance history: a per-group timeline of
``marts/rebalances`` (transitions marked and counted) and the named findings - owners that
were wrong in a past settled state (``core/settled_audit`` rows of settled states, even when
today's snapshot is clean, with how long they lasted), rebalances that did not settle within the
stuck limit and rebalance storms, on the page and as findings.csv rows (``PAST`` + status,
``STUCK``, ``STORM``). A state that never settled (a transition) is never a past fault. Plain
Python values read with pyarrow."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow.compute as pc

from pipelines.report.order import nulls_last
from pipelines.warehouse.reading import read_built
from pipelines.warehouse.warehouse import Warehouse

TIMELINE_ROWS = 30  # rebalances listed per group (the latest ones)
PAST_FINDINGS = 100  # past not-ok owners on the page (findings.csv holds them all)

# findings.csv statuses: "past_" + the settled audit's status (past_wrong_owner, past_unowned, ...)
# per partition of a past settled state; one stuck_rebalance row per rebalance that did not
# settle within the limit; one rebalance_storm row per group
PAST, STUCK, STORM = "past_", "stuck_rebalance", "rebalance_storm"


@dataclass
class RebalanceFacts:
    timeline: dict[tuple[str, str], list[dict]]  # (source, group), in order -> its latest rebalances, oldest first
    totals: dict[tuple[str, str], int]
    storms: list[dict]  # source, group_id, rebalances, peak (most in an hour), first_at, last_at
    past_wrong: list[dict]  # core/settled_audit rows not ok of settled states that ended before the history's end
    stuck: list[dict] = field(default_factory=list)  # marts/rebalances rows (a rebalance's last state) with is_stuck
    transitions: dict[tuple[str, str], int] = field(default_factory=dict)  # (source, group) -> unsettled states


def state_name(row: dict) -> str:
    """A past state as findings.csv names it: the zxid that began a ZooKeeper state, the
    generation (or KIP-848 group epoch) and the record that began a Kafka one."""
    if row["state_zxid"] is not None:
        return f"state at zxid {row['state_zxid']:#x}"
    return f"generation {row['generation']} (__consumer_offsets-{row['offsets_partition']} offset {row['log_offset']})"


def gather_rebalances(wh: Warehouse, run_id: str, read) -> RebalanceFacts | None:
    """None when the run has no rebalance history (``marts/rebalances`` not built or empty)."""
    marts = read_built(wh, "marts/rebalances", run_id)
    if marts is None or marts.num_rows == 0:
        return None
    # a rebalance without a start time (group metadata v0/v1, KIP-848 epochs) keeps its place
    # in the log after the timed ones of its group
    rows = sorted(marts.to_pylist(), key=lambda r: nulls_last(r["source"], r["group_id"], r["started_at"],
                                                              r["state_zxid"], r["offsets_partition"], r["log_offset"]))
    by_group: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        by_group[(r["source"], r["group_id"])].append(r)
    storms = []
    for (source, group), rs in by_group.items():
        stormy = [r for r in rs if r["is_storm"]]
        if stormy:
            peaks = [r["rebalances_last_hour"] for r in stormy if r["rebalances_last_hour"] is not None]
            times = [r["started_at"] for r in stormy if r["started_at"] is not None]
            storms.append({"source": source, "group_id": group, "rebalances": len(stormy),
                           "peak": max(peaks, default=None), "first_at": min(times, default=None),
                           "last_at": max(times, default=None)})
    columns = ["source", "group_id", "state_zxid", "generation", "offsets_partition", "log_offset", "topic",
               "partition", "broker_id", "expected_owner", "observed_owner", "status", "held_from", "held_until",
               "settled"]
    audit = read(wh, "core/settled_audit", run_id, columns)
    settled = pc.fill_null(audit["settled"], False)
    past = audit.filter(pc.and_(pc.and_(pc.not_equal(audit["status"], "ok"), pc.is_valid(audit["held_until"])),
                                settled))
    past_rows = sorted(past.to_pylist(), key=lambda r: nulls_last(r["held_from"], r["group_id"], r["topic"],
                                                                  r["partition"]))
    for p in past_rows:
        p["lasted_ms"] = _ms_between(p["held_from"], p["held_until"])
    return RebalanceFacts(
        timeline={k: v[-TIMELINE_ROWS:] for k, v in by_group.items()},
        totals={k: len(v) for k, v in by_group.items()},
        storms=storms,
        past_wrong=past_rows,
        stuck=[r for r in rows if r.get("is_stuck")],
        transitions={k: sum(bool(r.get("is_transition")) for r in v) for k, v in by_group.items()},
    )


def _ms_between(start, end) -> int | None:
    """Whole milliseconds from ``start`` to ``end`` (None when either is unknown)."""
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000)
