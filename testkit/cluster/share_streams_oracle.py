"""kaudit's share group tables against a real cluster's answers (``ShareScenario.java``'s
``oracle.json``: ``describeShareGroups``, ``listShareGroupOffsets`` with the broker's lag, log
end offsets, topic ids) and what the scenario did (the poison record released until archived);
its Streams group tables against ``StreamsScenario.java``'s (``describeStreamsGroups`` with
current and target tasks, ``listStreamsGroupOffsets``) and the member the scenario killed."""

from __future__ import annotations

from pathlib import Path

from pipelines.spark.streams_groups import KINDS
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.kraft_oracle import kaudit


def build_steps(logs: Path, warehouse: Path, run: str) -> None:
    base = ["--warehouse", str(warehouse), "--run-id", run, "--spark-master", "local[2]"]
    for step in (["extract", "offsets", str(logs)], ["extract", "log-end", str(logs)], ["build"]):
        code, out = kaudit(*base, *step)
        assert code == 0 and "internal error" not in out, out[-3000:]


SHARE_TABLES = ("core/share_partition_state", "core/share_group_assignments", "core/share_group_findings",
                "marts/share_group_lag", "marts/share_group_archived_records")


def share_tables(warehouse: Path, run: str) -> dict[str, list[dict]]:
    """The share group tables ``compare`` and ``planted`` read, of the run ``run``."""
    wh = Warehouse(warehouse)
    return {t: read_arrow(wh, t, run).to_pylist() for t in SHARE_TABLES}


def build(logs: Path, warehouse: Path, run: str = "share") -> dict[str, list[dict]]:
    build_steps(logs, warehouse, run)
    return share_tables(warehouse, run)


def compare(tables: dict[str, list[dict]], oracle: dict) -> int:
    """Asserts every member, assignment, start offset and lag equals the cluster's; returns how
    many values were compared."""
    compared = 0
    groups = oracle["groups"]
    state = {(r["group_id"], f"{r['topic']}:{r['partition']}"): r for r in tables["core/share_partition_state"]}
    assert {g for g, _ in state} == set(groups)
    for g, d in groups.items():
        for tp, start in d["start_offsets"].items():
            row = state[(g, tp)]
            assert row["state_known"], row
            assert (row["start_offset"], row["lag"]) == (start, d["lag"][tp]), (g, tp, row)
            assert row["log_end_offset"] == oracle["log_end_offsets"][tp]
            assert row["topic_id"] == oracle["topic_ids"][tp.split(":")[0]]
            compared += 4
        # the mart: the same lag per share-partition, owned by the members the cluster named
        owners = {tp: sorted(m["member_id"] for m in d["members"] if tp in m["assignment"]) for tp in d["lag"]}
        mart = {f"{r['topic']}:{r['partition']}": r for r in tables["marts/share_group_lag"] if r["group_id"] == g}
        assert {tp: (r["start_offset"], r["lag"], sorted((r["owners"] or "").split(", ")))
                for tp, r in mart.items()} == {
            tp: (d["start_offsets"][tp], d["lag"][tp], owners[tp]) for tp in d["lag"]}
        compared += 3 * len(mart)
        members = {}
        for r in tables["core/share_group_assignments"]:
            if r["group_id"] == g:
                m = members.setdefault(r["member_id"], {"client_id": r["client_id"], "member_epoch": r["member_epoch"],
                                                        "assignment": []})
                if r["partition"] is not None:
                    m["assignment"].append(f"{r['topic']}:{r['partition']}")
                assert (r["assignment_epoch"], r["group_epoch"]) == (d["assignment_epoch"], d["group_epoch"])
        theirs = {m["member_id"]: {"client_id": m["client_id"], "member_epoch": m["member_epoch"],
                                   "assignment": sorted(m["assignment"])} for m in d["members"]}
        assert {k: {**v, "assignment": sorted(v["assignment"])} for k, v in members.items()} == theirs
        compared += 2 + sum(3 + len(m["assignment"]) for m in theirs.values())
    return compared


def planted(tables: dict[str, list[dict]], oracle: dict) -> None:
    """The poison record is the one finding: archived unacknowledged at its offset, in the
    faulty group only; the healthy group is clean."""
    did = oracle["did"]
    findings = tables["core/share_group_findings"]
    assert [(f["group_id"], f["topic"], f["partition"], f["finding"]) for f in findings] == [
        ("share-poison", did["topic"], did["poison_partition"], "archived_unacknowledged")]
    row = next(r for r in tables["core/share_partition_state"]
               if r["group_id"] == "share-poison" and r["partition"] == did["poison_partition"])
    assert row["archived_offsets"] == [did["poison_offset"]]
    assert row["archived_max_delivery_count"] == did["poison_deliveries"]["share-poison"]
    healthy = [r for r in tables["core/share_partition_state"] if r["group_id"] == "share-healthy"]
    assert healthy and all(r["archived"] == 0 for r in healthy)
    assert [(r["group_id"], r["topic"], r["partition"], r["archived_offset"], r["max_delivery_count"])
            for r in tables["marts/share_group_archived_records"]] == [
        ("share-poison", did["topic"], did["poison_partition"], did["poison_offset"],
         did["poison_deliveries"]["share-poison"])]


STREAMS_TABLES = ("core/streams_group_topology", "core/streams_group_tasks", "core/streams_group_findings")
_ROLES = {"source": "source_topics", "repartition_sink": "repartition_sink_topics",
          "changelog": "state_changelog_topics", "repartition_source": "repartition_source_topics"}


def build_streams(logs: Path, warehouse: Path, run: str = "streams") -> dict[str, list[dict]]:
    """kaudit's extract (offsets, log-end) and build on a Streams cluster's log dir; its
    ``core/streams_*`` tables and ``raw/offset_commits``."""
    build_steps(logs, warehouse, run)
    wh = Warehouse(warehouse)
    return {t: read_arrow(wh, t, run).to_pylist() for t in (*STREAMS_TABLES, "raw/offset_commits")}


def compare_streams(tables: dict[str, list[dict]], group: dict) -> int:
    """Asserts one Streams group's live topology, every member's epoch, process, client and
    current and target tasks (active, standby, warm-up; current without the tasks pending
    revocation, as ``describeStreamsGroups`` lists them) and the group's epochs equal the
    cluster's answer ``group``; returns how many values were compared."""
    g = group["group_id"]
    topo = [r for r in tables["core/streams_group_topology"] if r["group_id"] == g]
    ours = {(r["subtopology_id"], _ROLES[r["role"]], r["topic"]) for r in topo}
    theirs = {(s, k, t) for s, d in group["subtopologies"].items() for k, ts in d.items() for t in ts}
    assert ours == theirs, (g, ours ^ theirs)
    assert {r["topology_epoch"] for r in topo} == {group["topology_epoch"]}
    compared = len(theirs) + 1
    members: dict[str, dict] = {}
    for r in tables["core/streams_group_tasks"]:
        if r["group_id"] != g or r["pending_revocation"]:
            continue
        m = members.setdefault(r["member_id"], {"process_id": r["process_id"], "client_id": r["client_id"],
                                                "target": {k: [] for k in KINDS}, **{k: [] for k in KINDS}})
        task = f"{r['subtopology_id']}_{r['partition']}"
        if r["assignment"] == "current":
            m["member_epoch"] = r["member_epoch"]
            m[r["task_kind"]].append(task)
        else:
            m["target"][r["task_kind"]].append(task)
        assert (r["assignment_epoch"], r["group_epoch"]) == (group["assignment_epoch"], group["group_epoch"]), r

    def norm(m: dict) -> dict:
        return {"member_epoch": m.get("member_epoch"), "process_id": m["process_id"], "client_id": m["client_id"],
                **{k: sorted(m[k]) for k in KINDS}, "target": {k: sorted(m["target"][k]) for k in KINDS}}

    cluster = {m["member_id"]: norm(m) for m in group["members"]}
    # a member holding no task at all has no task row: only its epoch and ids are unseen
    assert {k: norm(v) for k, v in members.items()} == {
        k: v for k, v in cluster.items() if k in members or any(v[t] or v["target"][t] for t in KINDS)}
    compared += 2 + sum(3 + sum(len(v[t]) + len(v["target"][t]) for t in KINDS) for v in cluster.values())
    return compared


def latest_commits(commits: list[dict]) -> dict[str, dict[str, int]]:
    """``raw/offset_commits`` rows as each group's latest committed offset per ``topic:partition``."""
    out: dict[str, dict[str, int]] = {}
    for c in sorted(commits, key=lambda c: (c["offsets_partition"], c["log_offset"])):
        out.setdefault(c["group_id"], {})[f"{c['topic']}:{c['partition']}"] = c["committed_offset"]
    return out
