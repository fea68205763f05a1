"""kaudit on a tiered-storage scenario's data dirs (``testkit.cluster.tiered``), compared with
what the scenario did and the broker's own answers.

``audit(case, warehouse, run_id)`` runs every step (``extract kraft``, ``offsets``,
``log-end``, ``build``, ``validate``, ``report``); ``compare(answer, warehouse, run_id)`` sets
kaudit's tables against the answer of ``TieredScenario.java``:

- committed offsets and lag: as ``kraft_oracle.compare_offsets`` (the groups' offsets read
  back with listConsumerGroupOffsets, listOffsets latest);
- every partition: ``raw/log_end_offsets`` local start = listOffsets earliest-local, end =
  latest; the log-start checkpoint = earliest (the broker wrote it at its clean shutdown);
  ``raw/remote_log_metadata``: the topic id = describeTopics', the segments whose last event is
  COPY_SEGMENT_FINISHED start at earliest and cover [earliest, earliest-local) without a gap or
  overlap, those deleted (DELETE_SEGMENT_FINISHED) cover [0, earliest); ``data_loss_risk``'s
  log start = earliest on every row;
- findings (``marts/data_loss_risk``): a commit below earliest is ``lost`` with earliest -
  committed records; one inside the oldest remote segment (batch earliest / n, its records
  timestamped produced_at - recent_offset_ms + batch * batch_spacing_ms) is ``at_risk``, deleted
  when that timestamp + retention.ms passes, with its records to the segment's end; any other
  status is a false finding.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.kraft_oracle import Comparison, _rows, compare_offsets
from testkit.cluster.kraft_oracle import audit as audit_steps


def _tp(text: str) -> tuple[str, int]:
    topic, part = text.rsplit("/", 1)
    return topic, int(part)


def as_kraft_oracle(answer: dict) -> dict:
    """The answer in the form of ``kraft_oracle.compare_offsets``'s oracle."""
    return {
        "groups": {g: {"offsets": {tp.replace("/", ":"): o for tp, o in d.items()}}
                   for g, d in answer["committed"].items()},
        "log_offsets": {tp.replace("/", ":"): o for tp, o in answer["partitions"].items()},
    }


def extract_and_marts(case: Path, warehouse: Path, run_id: str) -> None:
    """The extracts of a kept case and the marts the comparison reads (``data_loss_risk``,
    ``consumer_lag`` and what feeds them), without the Spark core tables, GX and the report."""
    from pipelines.context import RunContext
    from pipelines.kafka.extract import extract_log_end, extract_offsets
    from pipelines.kraft.extract import extract_kraft
    from pipelines.transform.dbt_runner import run_dbt

    ctx = RunContext(Warehouse(warehouse), run_id, quiet=True)
    extract_kraft(ctx, [case / "metadata" / "__cluster_metadata-0"])
    extract_offsets(ctx, [case / "logs"], workers=1)
    extract_log_end(ctx, [case / "logs"], None)
    run_dbt(ctx, select=["+data_loss_risk", "+consumer_lag"])


def audit(case: Path, warehouse: Path, run_id: str) -> dict[str, str]:
    """Every kaudit step on a kept case (``logs/``, ``metadata/__cluster_metadata-0``)."""
    outcome = SimpleNamespace(log_dirs=[case / "logs"], metadata_dir=case / "metadata" / "__cluster_metadata-0",
                              version=case.name, scenario="tiered")
    return audit_steps(outcome, warehouse, run_id)


def _cover(segments: list[dict]) -> list[tuple[int, int]]:
    """The offset ranges [start, end + 1) of segments, in order."""
    return sorted((s["start_offset"], s["end_offset"] + 1) for s in segments)


def _contiguous(ranges: list[tuple[int, int]], lo: int, hi: int) -> bool:
    at = lo
    for a, b in ranges:
        if a != at:
            return False
        at = b
    return at == hi


def compare(answer: dict, warehouse: Path, run_id: str, checkpoint: bool = True, remote: bool = True) -> Comparison:
    """``checkpoint``/``remote`` False: the run had no log-start checkpoint / no
    ``__remote_log_metadata`` (a fixture with them taken out): nothing is compared with them,
    and without remote metadata no commit is expected at risk from remote retention."""
    wh = Warehouse(warehouse)
    cmp = Comparison()
    compare_offsets(cmp, wh, as_kraft_oracle(answer), run_id)
    did = answer["did"]
    n = did["records_per_batch"]

    ends = {(r["topic"], r["partition"]): r for r in _rows(wh, "raw/log_end_offsets", run_id)}
    checkpoints = {(r["topic"], r["partition"]): r["log_start_offset"]
                   for r in _rows(wh, "raw/log_start_checkpoints", run_id)}
    events = _rows(wh, "raw/remote_log_metadata", run_id)
    cmp.check("remote log events' topic ids", {r["topic_id"] for r in events},
              {answer["topic_id"]} if remote else set())
    last: dict[str, dict] = {}
    for r in sorted(events, key=lambda r: (r["metadata_partition"], r["log_offset"])):
        last[r["remote_segment_id"]] = r
    created = {r["remote_segment_id"]: r for r in events if r["record_type"] == "RemoteLogSegmentMetadataRecord"}
    risk = {(r["group_id"], r["topic"], r["partition"]): r
            for r in _rows(wh, "marts/data_loss_risk", run_id) if r["source"] == "kafka"}

    for text, o in sorted(answer["partitions"].items()):
        key = _tp(text)
        r = ends.get(key)
        cmp.check(f"local log start {text}", r and r["log_start_offset"], o["earliest_local"])
        cmp.check(f"log end {text}", r and r["log_end_offset"], o["latest"])
        cmp.check(f"log-start checkpoint {text}", checkpoints.get(key), o["earliest"] if checkpoint else None)
        mine = [s for s in created.values() if (s["topic"], s["partition"]) == key]
        live = [s for s in mine if last[s["remote_segment_id"]]["state"] == "COPY_SEGMENT_FINISHED"]
        gone = [s for s in mine if last[s["remote_segment_id"]]["state"] == "DELETE_SEGMENT_FINISHED"]
        if not remote:
            cmp.check(f"remote segments of {text}", mine, [])
        else:
            cmp.check(f"remote log start {text}", min((s["start_offset"] for s in live), default=None),
                      o["earliest"])
            cmp.check(f"live remote segments cover [earliest, earliest-local) of {text}",
                      _contiguous(_cover(live), o["earliest"], o["earliest_local"]), True)
            cmp.check(f"deleted remote segments cover [0, earliest) of {text}",
                      _contiguous(_cover(gone), 0, o["earliest"]), True)
            cmp.check(f"remote segments of {text} in no other state", len(live) + len(gone), len(mine))
        for (g, t, p), row in sorted(risk.items()):
            if (t, p) == key:
                cmp.check(f"data_loss_risk log start {g} {text}", row["log_start_offset"], o["earliest"])

    for g, tps in sorted(answer["committed"].items()):
        for text, committed in sorted(tps.items()):
            t, p = _tp(text)
            o = answer["partitions"][text]
            row = risk.pop((g, t, p), None)
            if row is None:
                cmp.mismatches.append(f"data_loss_risk has no row of {g} {text}")
                continue
            if committed < o["earliest"]:
                cmp.expected += 1
                if row["status"] == "lost" and row["records_lost"] == o["earliest"] - committed:
                    cmp.found += 1
                else:
                    cmp.mismatches.append(f"loss of {g} {text} ({o['earliest'] - committed} records) not found: {row}")
            elif remote and committed < o["earliest"] + n and o["earliest"] < o["earliest_local"]:
                batch = o["earliest"] // n
                ts = did["produced_at"] - did["recent_offset_ms"] + batch * did["batch_spacing_ms"]
                cmp.expected += 1
                deletes = row["deletes_at"] and int(row["deletes_at"].timestamp() * 1000)
                if (row["status"], row["records_at_risk"], deletes) == \
                        ("at_risk", o["earliest"] + n - committed, ts + did["retention_ms"]):
                    cmp.found += 1
                else:
                    cmp.mismatches.append(f"remote retention of {g} {text} (deletes at {ts + did['retention_ms']}, "
                                          f"{o['earliest'] + n - committed} records) not found: {row}")
            elif row["status"] != "ok":
                cmp.false.append(f"data_loss_risk {g} {text}: {row['status']}")
    cmp.false += [f"data_loss_risk {k}: {r['status']}" for k, r in sorted(risk.items()) if r["status"] != "ok"]
    return cmp


def kept_answer(case: Path) -> dict:
    return json.loads((case / "oracle.json").read_text())
