"""kaudit's migration audit (``pipelines.spark.migration``) on a migrated cluster's files,
compared with what ``testkit.cluster.migration`` did and the cluster's answers before and after
(``MigrationScenario.java``: describeCluster, describeTopics, describeConfigs,
listConsumerGroupOffsets):

- states: the ZkMigrationStateRecords are PRE_MIGRATION (the controller started in migration
  mode), MIGRATION (the metadata copied), POST_MIGRATION (the controller restarted without the
  migration configs), in that order, between the two answers;
- audit: the cluster id, every topic's id before (ZooKeeper) and after (KRaft), its partitions'
  replicas, its configs; a topic created after the migration only in KRaft; the broker's
  endpoint on both sides; no finding;
- offsets: every group's committed offset per partition before and after, with its status; the
  planted faults (a group moved backwards, a group's offsets deleted) are the findings, nothing
  else.
"""

from __future__ import annotations

import json
from pathlib import Path

from testkit.cluster.kraft_oracle import Comparison


def _tp(text: str) -> tuple[str, int]:
    topic, part = text.rsplit(":", 1)
    return topic, int(part)


def _status(before: int | None, after: int | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "lost"
    return "moved_backwards" if after < before else "advanced" if after > before else "unchanged"


def compare(oracle: dict, states: list[dict], audit: list[dict], offsets: list[dict]) -> Comparison:
    """``states``, ``audit``, ``offsets``: the rows of core/migration_states, _audit, _offsets."""
    before, after = oracle["before"], oracle["after"]
    cmp = Comparison()
    ordered = sorted(states, key=lambda r: r["offset"])
    cmp.check("migration states", [r["state"] for r in ordered], ["PRE_MIGRATION", "MIGRATION", "POST_MIGRATION"])
    for r in ordered:
        ms = int(r["at"].timestamp() * 1000)
        cmp.check(f"{r['state']} between the answers", before["at"] <= ms <= after["at"], True)

    rows = {(r["kind"], r["topic"], r["partition"], r["name"]): r for r in audit}

    def check(kind, topic, partition, name, zk, kraft, status):
        r = rows.pop((kind, topic, partition, name), None)
        cmp.check(f"{kind} {topic} {partition} {name}", r and (r["zookeeper"], r["kraft"], r["status"]),
                  (zk, kraft, status))

    check("cluster_id", None, None, None, before["cluster_id"], after["cluster_id"], "match")
    for t, d in sorted(after["topics"].items()):
        old = before["topics"].get(t)
        status = "match" if old else "only_kraft"
        check("topic_id", t, None, None, old and old["topic_id"], d["topic_id"], status)
        for p in d["partitions"]:
            reps = ",".join(map(str, sorted(p["replicas"])))
            check("replicas", t, p["partition"], None, reps if old else None, reps, status)
        for name, value in sorted(d["configs"].items()):
            check("config", t, None, name, old and old["configs"].get(name), value, status)
    for b in after["brokers"]:
        endpoint = f"{b['host']}:{b['port']}"
        check("broker", None, None, str(b["id"]), endpoint, endpoint, "match")
    for key, r in sorted(rows.items(), key=str):
        if r["is_finding"]:
            cmp.false.append(f"migration_audit {key}: {r['status']} ({r['zookeeper']} -> {r['kraft']})")

    ours = {(r["group_id"], r["topic"], r["partition"]): r for r in offsets}
    keys = {(g, *_tp(tp)) for phase in (before, after) for g, d in phase["committed"].items() for tp in d}
    for g, t, p in sorted(keys):
        b = before["committed"].get(g, {}).get(f"{t}:{p}")
        a = after["committed"].get(g, {}).get(f"{t}:{p}")
        want = _status(b, a)
        r = ours.pop((g, t, p), None)
        cmp.check(f"offsets of {g} {t}-{p}", r and (r["before_offset"], r["after_offset"], r["status"]), (b, a, want))
        if want in ("lost", "moved_backwards"):
            cmp.expected += 1
            cmp.found += bool(r and r["is_finding"] and r["status"] == want)
        elif r and r["is_finding"]:
            cmp.false.append(f"migration_offsets {g} {t}-{p}: {r['status']}")
    for key, r in sorted(ours.items()):
        cmp.mismatches.append(f"migration_offsets row no group of the scenario committed: {key} {r['status']}")
    return cmp


def kept_oracle(case: Path) -> dict:
    return json.loads((case / "oracle.json").read_text())


def extract(case_zk: Path, metadata: Path, logs: Path, warehouse: Path, run_id: str) -> None:
    """The extracts the migration audit reads: the ZooKeeper data dir, the metadata log, the offsets."""
    from pipelines.context import RunContext
    from pipelines.kafka.extract import extract_offsets
    from pipelines.kraft.extract import extract_kraft
    from pipelines.steps import extract_zk_snapshot
    from pipelines.warehouse.warehouse import Warehouse

    ctx = RunContext(Warehouse(warehouse), run_id, quiet=True)
    extract_zk_snapshot(ctx, case_zk)
    extract_kraft(ctx, [metadata])
    extract_offsets(ctx, [logs], workers=1)
