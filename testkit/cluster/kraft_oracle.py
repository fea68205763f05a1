"""kaudit run on a real cluster's data dirs, compared with the cluster's own answers.

``audit(outcome, warehouse, run_id)`` runs the whole pipeline through kaudit's command line
(``extract offsets``, ``extract log-end``, ``extract kraft``, ``build``, ``validate``,
``report``), each step in this process; ``compare`` reads its tables and sets them against the
oracle (``testkit.cluster.kraft_scenarios.Outcome``):

- committed offsets: every (group, topic, partition) the cluster lists, with its offset, in the
  latest effective commit of ``raw/offset_commits`` (tombstones delete, aborted and pending
  transactional commits do not count) and in ``marts/consumer_lag``; nothing more;
- lag: ``marts/consumer_lag.lag`` = the cluster's latest offset - the committed offset, and
  committed offset, log end and lag as ``kafka-consumer-groups --describe`` prints them;
- log start and end: ``raw/log_end_offsets`` = ``listOffsets`` earliest and latest;
- the KRaft registry: live topics and their ids, partitions and replicas, brokers' endpoints,
  cluster id and controller; after a ``kill -9`` also leaders, ISRs and the unfenced brokers
  (= the brokers ``describeCluster`` lists);
- owners: for every group the cluster reports Stable, ``core/assignment_audit`` holds each
  partition a member is assigned, observed owner = that member id, status ``ok``, and for
  KIP-848 members the expected owner = the member whose target holds it;
- findings: the planted resets in ``marts/offset_resets`` (``earliest``), the planted
  DeleteRecords losses in ``marts/data_loss_risk`` (``lost``, with the records lost); a
  finding on a group the scenario kept healthy (a non-``ok`` audit row, a
  ``core/consumer_group_findings`` row, a reset, a loss) is a false one.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.kraft_scenarios import Outcome


@dataclass
class Comparison:
    compared: int = 0
    mismatches: list[str] = field(default_factory=list)
    expected: int = 0
    found: int = 0
    false: list[str] = field(default_factory=list)

    def check(self, what: str, ours, theirs) -> None:
        self.compared += 1
        if ours != theirs:
            self.mismatches.append(f"{what}: kaudit {ours!r}, cluster {theirs!r}")

    def row(self) -> str:
        return (f"records compared {self.compared}, mismatches {len(self.mismatches)}, "
                f"findings expected {self.expected} found {self.found} false {len(self.false)}")


def kaudit(*args: str) -> tuple[int, str]:
    """One kaudit command in this process: (exit code, what it printed)."""
    from pipelines.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            main(list(args))
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
    return code, printed.getvalue()


def audit(outcome: Outcome, warehouse: Path, run_id: str) -> dict[str, str]:
    """Every step of the pipeline on the outcome's data dirs; raises on a step that fails."""
    base = ["--warehouse", str(warehouse), "--run-id", run_id, "--spark-master", "local[2]"]
    logs = [str(p) for p in outcome.log_dirs]
    steps = {
        "extract kraft": ["extract", "kraft", str(outcome.metadata_dir)],
        "extract offsets": ["extract", "offsets", *logs],
        "extract log-end": ["extract", "log-end", *logs],
        "build": ["build"],
        "validate": ["validate"],
        "report": ["report"],
    }
    printed = {}
    for name, args in steps.items():
        code, out = kaudit(*base, *args)
        printed[name] = out
        if code != 0 or "internal error" in out:
            raise AssertionError(f"kaudit {name} exited {code} on {outcome.version}/{outcome.scenario}:\n{out[-3000:]}")
    return printed


def _rows(wh: Warehouse, table: str, run_id: str) -> list[dict]:
    return read_arrow(wh, table, run_id).to_pylist()


def effective_commits(rows: list[dict]) -> dict[tuple[str, str, int], int]:
    """The latest commit of each key in log order, tombstones deleting, aborted/pending skipped."""
    latest: dict[tuple[str, str, int], tuple[tuple[int, int], int | None]] = {}
    for r in rows:
        if r["txn_state"] in ("aborted", "pending"):
            continue
        key = (r["group_id"], r["topic"], r["partition"])
        order = (r["offsets_partition"], r["log_offset"])
        if key not in latest or order > latest[key][0]:
            latest[key] = (order, None if r["is_tombstone"] else r["committed_offset"])
    return {k: v for k, (_, v) in latest.items() if v is not None}


def tp_key(text: str) -> tuple[str, int]:
    """``"topic:partition"`` (the driver's form) as ``(topic, partition)``."""
    topic, part = text.rsplit(":", 1)
    return topic, int(part)


def compare_offsets(cmp: Comparison, wh: Warehouse, oracle: dict, run_id: str) -> dict[tuple[str, str, int], dict]:
    """Committed offsets (``raw/offset_commits``, ``marts/consumer_lag``) and lags (the cluster's
    latest offset, ``kafka-consumer-groups --describe``) against the oracle; the lag rows by key."""
    groups = oracle["groups"]
    theirs = {(g, *tp_key(tp)): off for g, d in groups.items() for tp, off in d["offsets"].items()}
    raw = {k: v for k, v in effective_commits(_rows(wh, "raw/offset_commits", run_id)).items() if k[0] in groups}
    lag = {(r["group_id"], r["topic"], r["partition"]): r
           for r in _rows(wh, "marts/consumer_lag", run_id) if r["source"] == "kafka" and r["group_id"] in groups}
    for key in sorted(set(theirs) | set(raw)):
        cmp.check(f"raw committed offset {key}", raw.get(key), theirs.get(key))
    for key in sorted(set(theirs) | set(lag)):
        cmp.check(f"consumer_lag committed offset {key}", lag[key]["committed_offset"] if key in lag else None,
                  theirs.get(key))
        if key in lag and key in theirs:
            latest = oracle["log_offsets"][f"{key[1]}:{key[2]}"]["latest"]
            cmp.check(f"consumer_lag lag {key}", lag[key]["lag"], latest - theirs[key])
    for row in oracle.get("cli_describe", []):
        key = (row["group"], row["topic"], row["partition"])
        r = lag.get(key)
        cmp.check(f"kafka-consumer-groups {key}", r and (r["committed_offset"], r["log_end_offset"], r["lag"]),
                  (row["current_offset"], row["log_end_offset"], row["lag"]))
    return lag


def compare(outcome: Outcome, warehouse: Path, run_id: str) -> Comparison:
    wh = Warehouse(warehouse)
    cmp = Comparison()
    oracle, planted = outcome.oracle, outcome.planted
    groups = oracle["groups"]
    compare_offsets(cmp, wh, oracle, run_id)

    # log start: the first batch present or the log-start checkpoint, whichever is further (the
    # rule of int_partition_log), and where a group commits, data_loss_risk's; log end
    ends = {(r["topic"], r["partition"]): r for r in _rows(wh, "raw/log_end_offsets", run_id)}
    checkpoints = {(r["topic"], r["partition"]): r["log_start_offset"]
                   for r in _rows(wh, "raw/log_start_checkpoints", run_id)}
    risk_starts = {(r["topic"], r["partition"]): r["log_start_offset"]
                   for r in _rows(wh, "marts/data_loss_risk", run_id) if r["source"] == "kafka"}
    for tp, o in sorted(oracle["log_offsets"].items()):
        key = tp_key(tp)
        r = ends.get(key)
        cmp.check(f"log start {tp}", r and max(r["log_start_offset"], checkpoints.get(key, -1)), o["earliest"])
        if key in risk_starts:
            cmp.check(f"data_loss_risk log start {tp}", risk_starts[key], o["earliest"])
        cmp.check(f"log end {tp}", r and r["log_end_offset"], o["latest"])
        if o["max_timestamp"] >= 0 and r is not None and r["max_timestamp"] is not None:
            cmp.check(f"max timestamp {tp}", int(r["max_timestamp"].timestamp() * 1000), o["max_timestamp"])

    # owners of every Stable group: observed = the member the cluster names, status ok
    audit_rows = [r for r in _rows(wh, "core/assignment_audit", run_id) if r["source"] == "kafka"]
    by_group: dict[str, dict[tuple[str, int], dict]] = {}
    for r in audit_rows:
        by_group.setdefault(r["group_id"], {})[(r["topic"], r["partition"])] = r
    for g, d in sorted(groups.items()):
        if d["state"] != "STABLE":
            cmp.check(f"audit rows of {d['state']} group {g}", sorted(by_group.get(g, {})), [])
            continue
        held = {tp_key(tp): m["member_id"] for m in d["members"] for tp in m["assignment"]}
        target = {tp_key(tp): m["member_id"] for m in d["members"] for tp in m.get("target_assignment", [])}
        ours = by_group.get(g, {})
        cmp.check(f"owned partitions of {g}", sorted(ours), sorted(held))
        for tp, member in sorted(held.items()):
            r = ours.get(tp)
            cmp.check(f"owners of {g} {tp}", r and r["observed_owners"], [member])
            if d.get("type") == "Consumer":
                cmp.check(f"expected owner of {g} {tp}", r and r["expected_owner"], target.get(tp))

    # the KRaft registry: topic ids (a re-created topic: a new id, the old one deleted); after a
    # kill -9 also leaders, ISRs and which brokers are fenced (a clean shutdown writes more)
    topics = oracle["topics"]
    kt = _rows(wh, "raw/kraft_topics", run_id)
    live = {r["topic"]: r["topic_id"] for r in kt if r["deleted_offset"] is None and not r["topic"].startswith("__")}
    cmp.check("live topics and their ids", live, {t: v["topic_id"] for t, v in topics.items()})
    for t in planted.deleted_topics:
        cmp.check(f"deleted ids of {t}", sum(1 for r in kt if r["topic"] == t and r["deleted_offset"] is not None), 1)
    parts = {(r["topic"], r["partition"]): r for r in _rows(wh, "core/topic_partitions", run_id)}
    for t, v in sorted(topics.items()):
        cmp.check(f"partitions of {t}", sorted(p for (tt, p) in parts if tt == t),
                  [p["partition"] for p in v["partitions"]])
        for p in v["partitions"]:
            r = parts.get((t, p["partition"]))
            cmp.check(f"replicas of {t}-{p['partition']}", r and list(r["replicas"]), p["replicas"])
            if outcome.killed:
                cmp.check(f"leader of {t}-{p['partition']}", r and r["leader"], p["leader"])
                cmp.check(f"isr of {t}-{p['partition']}", r and sorted(r["isr"]), sorted(p["isr"]))
    brokers = {r["broker_id"]: r for r in _rows(wh, "core/brokers", run_id)}
    answering = {b["id"]: (b["host"], b["port"]) for b in oracle["cluster"]["brokers"]}
    cmp.check("brokers' endpoints", {b: (r["host"], r["port"]) for b, r in brokers.items() if b in answering},
              answering)
    if outcome.killed:
        cmp.check("unfenced brokers", sorted(b for b, r in brokers.items() if not r["fenced"]), sorted(answering))
    (cluster,) = _rows(wh, "raw/kraft_cluster", run_id)
    cmp.check("cluster id", cluster["cluster_id"], oracle["cluster"]["cluster_id"])
    # node 1 is the only voter (KafkaCluster); describeCluster names a random broker in KRaft mode
    cmp.check("active controller", cluster["controller_id"], 1)

    # findings: planted ones found, none on a healthy group
    for r in audit_rows:
        if r["status"] != "ok":
            cmp.false.append(f"assignment_audit {r['group_id']} {r['topic']}-{r['partition']}: {r['status']}")
    for r in _rows(wh, "core/consumer_group_findings", run_id):
        cmp.false.append(f"consumer_group_findings {r['group_id']} {r['member_id']} {r['finding']}: {r['detail']}")
    compare_planted(cmp, wh, planted, run_id)
    return cmp

def compare_planted(cmp: Comparison, wh: Warehouse, planted, run_id: str) -> None:
    """The scenario's planted resets (to earliest) and losses found with their sizes; any other
    reset or loss is a false finding."""
    resets = {(r["group_id"], r["topic"], r["partition"]): r for r in _rows(wh, "marts/offset_resets", run_id)}
    for g, tps in planted.resets.items():
        for topic, part in sorted(tps):
            cmp.expected += 1
            r = resets.pop((g, topic, part), None)
            if r is not None and r["reset_to"] == "earliest" and r["committed_offset"] == 0:
                cmp.found += 1
            else:
                cmp.mismatches.append(f"reset of {g} {topic}-{part} not found as earliest: {r}")
    cmp.false += [f"offset_resets {k}: {r['reset_to']}" for k, r in sorted(resets.items())]
    risk = {(r["group_id"], r["topic"], r["partition"]): r for r in _rows(wh, "marts/data_loss_risk", run_id)}
    for key, n in planted.lost.items():
        cmp.expected += 1
        r = risk.pop(key, None)
        if r is not None and r["status"] == "lost" and r["records_lost"] == n:
            cmp.found += 1
        else:
            cmp.mismatches.append(f"loss of {key} ({n} records) not found: {r}")
    cmp.false += [f"data_loss_risk {k}: {r['status']}" for k, r in sorted(risk.items()) if r["status"] != "ok"]
