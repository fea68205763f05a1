"""kaudit's share group tables against a real cluster's answers (``ShareScenario.java``'s
``oracle.json``: ``describeShareGroups``, ``listShareGroupOffsets`` with the broker's lag, log
end offsets, topic ids) and what the scenario did (the poison record released until archived)."""

from __future__ import annotations

from pathlib import Path

from pipelines.reading import read_arrow
from pipelines.warehouse import Warehouse
from testkit.cluster.kraft_oracle import kaudit


def build(logs: Path, warehouse: Path, run: str = "share") -> dict[str, list[dict]]:
    base = ["--warehouse", str(warehouse), "--run-id", run, "--spark-master", "local[2]"]
    for step in (["extract", "offsets", str(logs)], ["extract", "log-end", str(logs)], ["build"]):
        code, out = kaudit(*base, *step)
        assert code == 0 and "internal error" not in out, out[-3000:]
    wh = Warehouse(warehouse)
    return {t: read_arrow(wh, t, run).to_pylist()
            for t in ("core/share_partition_state", "core/share_group_assignments", "core/share_group_findings",
                      "marts/share_group_lag", "marts/share_group_archived_records")}


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
