"""What the report says about tiered storage (KIP-405): per partition with remote segments, the
log start the run used (the broker's ``log-start-offset-checkpoint``), the remote tier's range
(the segments ``__remote_log_metadata`` says are copied and not deleted), the local log's start
and end, and the segments deleted from the remote tier. Read with pyarrow from
``raw/remote_log_metadata``, ``raw/log_start_checkpoints`` and ``raw/log_end_offsets``; the
commits lost below the log start or at risk from remote retention are the data-loss findings of
``marts/data_loss_risk`` (docs/tiered-storage.md)."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.report.order import nulls_last
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse

MAX_ROWS = 200  # partitions shown; the raw tables have them all
LIVE = "COPY_SEGMENT_FINISHED"  # a segment in the remote tier, readable
DELETED = ("DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED")


@dataclass
class TieredFacts:
    partitions: list[dict]  # topic, partition, log_start_offset, remote_*, local_*, deleted, ...
    max_rows: int = MAX_ROWS

    @property
    def remote_segments(self) -> int:
        return sum(p["remote_segments"] for p in self.partitions)


def _rows(wh: Warehouse, table: str, run_id: str) -> list[dict]:
    return read_arrow(wh, table, run_id, with_run_id=False).to_pylist()


def _last_states(events: list[dict]) -> dict[str, dict]:
    """Each remote segment's creation record with the state of its last event (log order)."""
    created: dict[str, dict] = {}
    state: dict[str, str] = {}
    for r in sorted(events, key=lambda r: nulls_last(r["metadata_partition"], r["log_offset"])):
        sid = r["remote_segment_id"]
        if sid is None:
            continue
        if r["record_type"] == "RemoteLogSegmentMetadataRecord":
            created[sid] = r
        state[sid] = r["state"]
    return {sid: {**r, "state": state[sid]} for sid, r in created.items()}


def gather_tiered(wh: Warehouse, run_id: str) -> TieredFacts | None:
    """None when the run read no ``__remote_log_metadata`` record."""
    events = _rows(wh, "raw/remote_log_metadata", run_id)
    if not events:
        return None
    ends = {(r["topic"], r["partition"]): r for r in _rows(wh, "raw/log_end_offsets", run_id)}
    checkpoints = {(r["topic"], r["partition"]): r["log_start_offset"]
                   for r in _rows(wh, "raw/log_start_checkpoints", run_id)}
    by: dict[tuple, list[dict]] = {}
    for s in _last_states(events).values():
        by.setdefault((s["topic"] or s["topic_id"], s["partition"]), []).append(s)
    partitions = []
    for (topic, partition), segments in by.items():
        live = [s for s in segments if s["state"] == LIVE]
        end = ends.get((topic, partition), {})
        partitions.append({
            "topic": topic, "partition": partition,
            "log_start_offset": checkpoints.get((topic, partition)),
            "remote_segments": len(live),
            "remote_start_offset": min((s["start_offset"] for s in live), default=None),
            "remote_end_offset": max((s["end_offset"] for s in live), default=None),
            "remote_bytes": sum(s["segment_size_bytes"] or 0 for s in live),
            "deleted_segments": sum(1 for s in segments if s["state"] in DELETED),
            "other_segments": sum(1 for s in segments if s["state"] != LIVE and s["state"] not in DELETED),
            "local_start_offset": end.get("log_start_offset"),
            "log_end_offset": end.get("log_end_offset"),
        })
    partitions.sort(key=lambda p: nulls_last(p["topic"], p["partition"]))
    return TieredFacts(partitions)
