"""What the report says about time: lag in seconds per group (``marts/consumer_lag``),
committed offsets whose records were deleted or will be next (``marts/data_loss_risk``), offset
resets (``marts/offset_resets``) and stuck partitions (``marts/stuck_partitions``). Plain Python
values read with pyarrow; a mart that was not built is ``None``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pyarrow.compute as pc

from pipelines.report.order import negated, nulls_last
from pipelines.warehouse.reading import read_built
from pipelines.warehouse.warehouse import Warehouse

# findings.csv statuses of these findings (one row per partition)
DATA_LOST, DATA_AT_RISK, OFFSET_RESET, STUCK = "data_lost", "data_at_risk", "offset_reset", "stuck_partition"


@dataclass
class LagTimeFacts:
    groups: list[dict] | None  # source, group_id, partitions, max_lag_seconds, worst_partition, caught_up, inexact
    data_loss: list[dict] | None  # data_loss_risk rows not ok: lost first, then by seconds to loss
    resets: list[dict] | None
    stuck: list[dict] | None

    @property
    def empty(self) -> bool:
        return not any((self.groups, self.data_loss, self.resets, self.stuck))


def _groups(lag) -> list[dict] | None:
    if lag is None:
        return None
    rows = lag.filter(pc.is_valid(lag.column("lag_seconds"))).to_pylist()
    by: dict[tuple, dict] = defaultdict(lambda: {"partitions": 0, "max_lag_seconds": 0.0, "worst_partition": None,
                                                  "caught_up": 0, "inexact": 0})
    for r in rows:
        g = by[(r["source"], r["group_id"])]
        g["partitions"] += 1
        g["caught_up"] += r["lag_seconds"] == 0
        g["inexact"] += not r["lag_seconds_exact"]
        if g["worst_partition"] is None or r["lag_seconds"] > g["max_lag_seconds"]:
            g["max_lag_seconds"], g["worst_partition"] = r["lag_seconds"], f"{r['topic']}/{r['partition']}"
    out = [{"source": s, "group_id": gid, **g} for (s, gid), g in by.items()]
    return sorted(out, key=lambda g: nulls_last(-g["max_lag_seconds"], g["source"], g["group_id"]))


def gather_lag_time(wh: Warehouse, run_id: str) -> LagTimeFacts | None:
    """None when the run built none of the marts."""
    risk = read_built(wh, "marts/data_loss_risk", run_id)
    resets = read_built(wh, "marts/offset_resets", run_id)
    stuck = read_built(wh, "marts/stuck_partitions", run_id)
    groups = _groups(read_built(wh, "marts/consumer_lag", run_id))
    if risk is None and resets is None and stuck is None:
        return None
    loss = None
    if risk is not None:
        loss = risk.filter(pc.not_equal(risk.column("status"), "ok")).to_pylist()
        loss.sort(key=lambda r: nulls_last(r["status"] != "lost", -(r["records_lost"] or 0), r["seconds_to_loss"],
                                           r["group_id"]))
    return LagTimeFacts(
        groups=groups,
        data_loss=loss,
        resets=None if resets is None else sorted(resets.to_pylist(),
                                                  key=lambda r: nulls_last(r["committed_at"], r["group_id"])),
        stuck=None if stuck is None else sorted(stuck.to_pylist(),
                                                key=lambda r: nulls_last(negated(r["records_behind"]), r["group_id"])),
    )


def finding_rows(facts: LagTimeFacts | None) -> list[dict]:
    """findings.csv rows: source, group_id, topic, partition, status, committed_offset, log_end_offset, lag."""
    if facts is None:
        return []
    out = []
    for r in facts.data_loss or ():
        status = DATA_LOST if r["status"] == "lost" else DATA_AT_RISK
        end = r["log_end_offset"]
        known = end is not None and r["committed_offset"] is not None
        out.append({**r, "status": status, "lag": end - r["committed_offset"] if known else None})
    for r in facts.resets or ():
        out.append({**r, "source": "kafka", "status": OFFSET_RESET, "log_end_offset": None, "lag": None})
    for r in facts.stuck or ():
        out.append({**r, "source": "kafka", "status": STUCK, "log_end_offset": r["head_offset_at_end"],
                    "lag": r["records_behind"]})
    return out
