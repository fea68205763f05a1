"""What the report says about share groups (KIP-932) and Streams groups (KIP-1071): per share
group its members and what they hold, each share-partition's lag and the records archived
without being acknowledged; per Streams group each member's active, standby and warm-up tasks
with its lag, and the audit's findings; for both kinds every assignment epoch (its owners,
whether and how fast it settled, transitions counted apart from faults). Read with pyarrow from
``core/share_*``, ``core/streams_*`` and the marts ``share_group_lag``,
``share_group_archived_records``, ``streams_group_lag``, ``group_epochs`` (a mart not built:
the core tables' values, lag per task unknown, no epoch history)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pipelines.report.order import nulls_last
from pipelines.warehouse.reading import read_arrow, read_built
from pipelines.warehouse.tables import SHARE_GROUP_FINDINGS, STREAMS_GROUP_FINDINGS
from pipelines.warehouse.warehouse import Warehouse

KINDS = ("active", "standby", "warmup")
MAX_ROWS = 200  # partitions, archived offsets or tasks shown per group; findings.csv has every finding


@dataclass
class ShareStreamsFacts:
    share: list[dict]  # group_id, epochs, members, partitions, archived, findings
    streams: list[dict]  # group_id, epochs, members (tasks per kind, lag), tasks (lag rows), findings
    lag_built: bool  # marts/streams_group_lag was built (else the tasks' lag is unknown)
    epochs_built: bool = False  # marts/group_epochs was built (else no group has its epochs)
    max_rows: int = MAX_ROWS

    @property
    def findings(self) -> int:
        return sum(len(g["findings"]) for g in (*self.share, *self.streams))


def _rows(wh: Warehouse, table: str, run_id: str) -> list[dict]:
    return read_arrow(wh, table, run_id, with_run_id=False).to_pylist()


def _task(r: dict) -> str:
    return f"{r['subtopology_id']}_{r['partition']}"


def _task_order(task: str) -> tuple:
    sub, _, part = task.rpartition("_")
    return nulls_last(sub, int(part) if part.isdigit() else None, part)


def _epochs(wh: Warehouse, run_id: str) -> dict[tuple[str, str], list[dict]] | None:
    """``(group_type, group_id)`` -> its epochs in log order (marts/group_epochs), None when the
    mart was not built."""
    built = read_built(wh, "marts/group_epochs", run_id)
    if built is None:
        return None
    out: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in built.to_pylist():
        out[(r["group_type"], r["group_id"])].append(r)
    return out


def _history(g: dict, epochs: list[dict]) -> None:
    """``g["epochs"]`` (log order, the newest ``MAX_ROWS``) and ``g["epoch_counts"]``: settled,
    transitions, reconciling, faults, and the settled epochs' median and slowest settle time."""
    epochs = sorted(epochs, key=lambda r: nulls_last(r["offsets_partition"], r["log_offset"]))
    times = sorted(r["settle_ms"] for r in epochs if r["settle_ms"] is not None)
    g["epochs"] = epochs[-MAX_ROWS:]
    g["epoch_counts"] = {
        "epochs": len(epochs),
        **{o: sum(r["outcome"] == o for r in epochs) for o in ("settled", "transition", "reconciling")},
        "faults": sum(bool(r["is_fault"]) for r in epochs),
        "median_settle_ms": times[len(times) // 2] if times else None,
        "max_settle_ms": times[-1] if times else None,
    }


def _share(wh: Warehouse, run_id: str, epochs: dict | None) -> list[dict]:
    assigned = _rows(wh, "core/share_group_assignments", run_id)
    state = _rows(wh, "core/share_partition_state", run_id)
    found = _rows(wh, "core/share_group_findings", run_id)
    lag = read_built(wh, "marts/share_group_lag", run_id)
    owners: dict[tuple, list[str]] = defaultdict(list)
    groups: dict[str, dict] = {}

    def group(gid: str) -> dict:
        return groups.setdefault(gid, {"group_id": gid, "group_epoch": None, "assignment_epoch": None,
                                       "members": {}, "partitions": [], "archived": [], "findings": [],
                                       "epochs": [], "epoch_counts": None})

    for r in assigned:
        g = group(r["group_id"])
        g["group_epoch"], g["assignment_epoch"] = r["group_epoch"], r["assignment_epoch"]
        m = g["members"].setdefault(r["member_id"], {"member_id": r["member_id"], "client_id": r["client_id"],
                                                     "member_epoch": r["member_epoch"], "partitions": []})
        if r["partition"] is not None:
            m["partitions"].append(f"{r['topic'] or r['topic_id']}:{r['partition']}")
            owners[(r["group_id"], r["topic_id"], r["partition"])].append(r["member_id"])
    def held_by(r: dict) -> str:
        members = owners.get((r["group_id"], r["topic_id"], r["partition"]), [])
        return ", ".join(m or "-" for m in sorted(members, key=nulls_last))

    rows = lag.to_pylist() if lag is not None else [{**r, "owners": held_by(r)} for r in state]
    for r in rows:
        group(r["group_id"])["partitions"].append(r)
    for r in state:
        for offset in r["archived_offsets"] or ():
            group(r["group_id"])["archived"].append({"topic": r["topic"] or r["topic_id"], "partition": r["partition"],
                                                     "offset": offset,
                                                     "delivery_count": r["archived_max_delivery_count"]})
    order = {f: i for i, f in enumerate(SHARE_GROUP_FINDINGS)}
    for r in found:
        group(r["group_id"])["findings"].append(r)
    for (kind, gid), rows in (epochs or {}).items():
        if kind == "share":
            _history(group(gid), rows)
    for g in groups.values():
        g["members"] = sorted(g["members"].values(), key=lambda m: nulls_last(m["member_id"]))
        for m in g["members"]:
            m["partitions"].sort()
        g["partitions"].sort(key=lambda r: nulls_last(r["topic"], r["partition"]))
        g["archived"].sort(key=lambda r: nulls_last(r["topic"], r["partition"], r["offset"]))
        g["findings"].sort(key=lambda r: nulls_last(order.get(r["finding"], 99), r["topic"], r["partition"],
                                                    r["member_id"]))
        g["lag"] = sum(r["lag"] for r in g["partitions"] if r["lag"] is not None)
    return sorted(groups.values(), key=lambda g: nulls_last(-len(g["findings"]), g["group_id"]))


def _streams(wh: Warehouse, run_id: str, epochs: dict | None) -> tuple[list[dict], bool]:
    tasks = _rows(wh, "core/streams_group_tasks", run_id)
    found = _rows(wh, "core/streams_group_findings", run_id)
    lag = read_built(wh, "marts/streams_group_lag", run_id)
    groups: dict[str, dict] = {}

    def group(gid: str) -> dict:
        return groups.setdefault(gid, {"group_id": gid, "group_epoch": None, "assignment_epoch": None,
                                       "topology_epoch": None, "members": {}, "tasks": [], "findings": [],
                                       "epochs": [], "epoch_counts": None})

    for r in tasks:
        g = group(r["group_id"])
        g["group_epoch"], g["assignment_epoch"] = r["group_epoch"], r["assignment_epoch"]
        g["topology_epoch"] = r["topology_epoch"]
        m = g["members"].setdefault(r["member_id"], {"member_id": r["member_id"], "process_id": r["process_id"],
                                                     "member_epoch": None, "lag": None, "pending": [],
                                                     **{k: [] for k in KINDS}})
        if r["assignment"] == "current":
            m["member_epoch"] = r["member_epoch"]
            if r["pending_revocation"]:
                m["pending"].append(_task(r))
            elif r["task_kind"] in KINDS:
                m[r["task_kind"]].append(_task(r))
            else:  # a kind the contract allows but Kafka does not write: listed last, with its kind
                m["pending"].append(f"{_task(r)} (kind {r['task_kind']})")
    for r in lag.to_pylist() if lag is not None else ():
        g = group(r["group_id"])
        g["tasks"].append(r)
        for member in (r["active_member_id"] or "").split(", "):
            if member in g["members"] and r["lag"] is not None:
                g["members"][member]["lag"] = (g["members"][member]["lag"] or 0) + r["lag"]
    order = {f: i for i, f in enumerate(STREAMS_GROUP_FINDINGS)}
    for r in found:
        group(r["group_id"])["findings"].append(r)
    for (kind, gid), rows in (epochs or {}).items():
        if kind == "streams":
            _history(group(gid), rows)
    for g in groups.values():
        g["members"] = sorted(g["members"].values(), key=lambda m: nulls_last(m["member_id"]))
        for m in g["members"]:
            for k in (*KINDS, "pending"):
                m[k].sort(key=_task_order)
        g["tasks"].sort(key=lambda r: nulls_last(r["subtopology_id"], r["partition"], r["topic"]))
        g["findings"].sort(key=lambda r: nulls_last(order.get(r["finding"], 99), r["member_id"], r["subtopology_id"],
                                                    r["partition"]))
    return sorted(groups.values(), key=lambda g: nulls_last(-len(g["findings"]), g["group_id"])), lag is not None


def gather_share_streams(wh: Warehouse, run_id: str) -> ShareStreamsFacts | None:
    """None when the run has no share group and no Streams group."""
    epochs = _epochs(wh, run_id)
    share = _share(wh, run_id, epochs)
    streams, lag_built = _streams(wh, run_id, epochs)
    if not share and not streams:
        return None
    return ShareStreamsFacts(share=share, streams=streams, lag_built=lag_built, epochs_built=epochs is not None)


def finding_rows(facts: ShareStreamsFacts | None) -> list[dict]:
    """findings.csv rows (``source`` kafka, ``status`` the finding's name): ``group_id, topic,
    partition, member_id, finding, detail``; a Streams finding has no topic, its ``detail``
    begins with its task, ``task <subtopology>_<partition>: ``."""
    if facts is None:
        return []
    out = []
    for g in facts.share:
        for r in g["findings"]:
            out.append({"group_id": g["group_id"], "topic": r["topic"] or r["topic_id"], "partition": r["partition"],
                        "member_id": r["member_id"], "finding": r["finding"], "detail": r["detail"]})
    for g in facts.streams:
        for r in g["findings"]:
            task = f"task {_task(r)}: " if r["subtopology_id"] is not None else ""
            out.append({"group_id": g["group_id"], "topic": None, "partition": r["partition"],
                        "member_id": r["member_id"], "finding": r["finding"], "detail": task + (r["detail"] or "")})
    return out
