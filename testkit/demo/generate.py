"""Writes the demo cluster into a directory (``data/`` + ``faults.json``, the layout of
``pipelines/demo/``): ZooKeeper files from a real server, Kafka segments, and the manifest of
every planted fault and expected figure, computed by :mod:`testkit.oracle` from the cluster
spec and what the writers did (the ZooKeeper side from the tree as read back through kazoo
before the crash)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from testkit.demo.kafka import build_data_segments, build_offsets_segments
from testkit.demo.kraft import ROOT as KRAFT_ROOT
from testkit.demo.kraft import build_kraft
from testkit.demo.spec import (
    KAFKA_GROUPS,
    LEGACY_TOPICS,
    OFFSETS_TOPIC_PARTITIONS,
    RESET_TO_LATEST,
    SETTLE_WINDOW_MS,
    STORM_GROUP,
    TOPICS,
    WRONG_OWNER_GROUP,
    commit_at,
    commit_ts,
    data_batches,
    generation_ts,
    record_at,
)
from testkit.demo.zookeeper import build_zookeeper
from testkit.oracle import counts, expected_marts, kafka_audit, kafka_rebalances, storms, zk_audit, zk_states
from testkit.segments import group_partition

STORM_PER_HOUR = 3  # dbt_project.yml's rebalance_storm_per_hour when the demo was made (the tests read the var)


def lag_seconds(row: dict, log_ends: dict) -> float | None:
    """marts/consumer_lag's lag_seconds of a row: the log end's timestamp - the timestamp of the
    record at the committed offset (batch headers); 0 when caught up; None without a log end."""
    end = log_ends.get(f"{row['topic']}-{row['partition']}")
    if end is None or row.get("broker_id") is not None:
        return None
    if row["committed_offset"] >= end["log_end_offset"]:
        return 0.0
    at = record_at(row["topic"], row["partition"], row["committed_offset"])
    return max((end["max_timestamp"] - at) / 1000, 0.0)


def history(zk_changes: list, history_end_ms: int, audit: list[dict], lag: list[dict], log_ends: dict) -> dict:
    """The history the demo scripted: every ZooKeeper state of the whole retained history (from
    the oldest snapshot, the server's empty tree) and the past settled ones that ended with
    owners not ok (the default settle window), every ZooKeeper offset write, every Kafka
    generation as a rebalance, the planted reset to latest and the committed offsets below their
    log start. ``history_end_ms``: the time of the ZooKeeper history's last txn."""
    states = zk_states(zk_changes, {**TOPICS, **LEGACY_TOPICS}, history_end_ms, SETTLE_WINDOW_MS)
    # "group/topic/partition" -> [[zxid, mtime ms, offset], ...] in zxid order
    offset_writes: dict[str, list] = {}
    for c in zk_changes:
        parts = c.path.split("/")
        if len(parts) == 6 and parts[3] == "offsets" and c.op != "delete":
            offset_writes.setdefault(f"{parts[2]}/{parts[4]}/{parts[5]}", []).append([c.zxid, c.mtime, int(c.value)])
    past = [
        dict(
            group_id=s["group_id"],
            state_zxid=s["state_zxid"],
            held_until_zxid=s["next_zxid"],
            held_until=s["next_at"],
            **a,
        )
        for s in states
        if s["next_zxid"] is not None and s["settled"]
        for a in s["audit"]
        if a["status"] != "ok"
    ]
    assert any(p["group_id"] == WRONG_OWNER_GROUP and p["status"] == "wrong_owner" for p in past)
    assert all(r["status"] == "ok" for r in audit if r["group_id"] == WRONG_OWNER_GROUP), "today shows the wrong owner"
    kafka = kafka_rebalances(
        [
            (g.name, gen.generation, generation_ts(gen), {m.member_id for m in gen.members})
            for g in KAFKA_GROUPS
            for gen in g.generations
        ]
    )
    assert set(storms([*states, *kafka], STORM_PER_HOUR)) == {("kafka", STORM_GROUP)}
    group, topic, p, r = RESET_TO_LATEST
    g = next(x for x in KAFKA_GROUPS if x.name == group)
    before, after, at = commit_at(g, topic, p, r - 1), commit_at(g, topic, p, r), commit_ts(g, r)
    head_at = max(ts for _, _, ts in data_batches(topic, p) if ts <= at)
    reset = dict(
        group_id=group,
        topic=topic,
        partition=p,
        reset_to="latest",
        previous_committed_offset=before,
        committed_offset=after,
        size_records=after - before,
        size_seconds=(head_at - record_at(topic, p, before)) / 1000,
        committed_at=at,
    )
    lost = []
    for row in lag:
        end = log_ends.get(f"{row['topic']}-{row['partition']}")
        if end is None or row.get("broker_id") is not None:
            continue
        start = max(end["log_start_offset"], end.get("checkpoint_log_start_offset", 0))
        if row["committed_offset"] < start:
            lost.append(
                dict(
                    source=row["source"],
                    group_id=row["group_id"],
                    topic=row["topic"],
                    partition=row["partition"],
                    committed_offset=row["committed_offset"],
                    log_start_offset=start,
                    records_lost=start - row["committed_offset"],
                )
            )
    assert lost
    return dict(
        zookeeper_states=[{k: v for k, v in s.items() if k != "audit"} for s in states],
        past_not_ok=past,
        zookeeper_offset_writes=offset_writes,
        wrong_owner_group=WRONG_OWNER_GROUP,
        kafka_rebalances=kafka,
        storm_group=STORM_GROUP,
        offset_resets=[reset],
        data_lost=lost,
    )


def generate(demo: Path) -> dict:
    """Write ``demo/data/`` (replaced) and ``demo/faults.json``; returns the manifest."""
    data = demo / "data"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="kaudit-demo-zk-") as tmp:
        tree, zk, zk_changes = build_zookeeper(Path(tmp), data)
    log_ends = build_data_segments(data)
    kafka = build_offsets_segments(data)
    commits = kafka["commits"]
    audit = zk_audit(tree) + kafka_audit(KAFKA_GROUPS, TOPICS, kafka["tombstoned_groups"])
    marts = expected_marts(commits, tree, log_ends)
    for row in marts["consumer_lag"]:
        row["lag_seconds"] = lag_seconds(row, log_ends)
    seg, pos, lost = kafka["corrupt"]
    decodable = [c for c in commits if not c.corrupt]
    manifest = {
        "about": "Planted faults and expected figures of kaudit's demo cluster; written by scripts/make_demo_data.py.",
        "zookeeper": zk,
        "kafka": {
            "log_dir": "kafka-logs",
            "offsets_files": kafka["files"],
            "data_topics": log_ends,
            "offsets_partition_of_group": {
                g.name: group_partition(g.name, OFFSETS_TOPIC_PARTITIONS) for g in KAFKA_GROUPS
            },
        },
        "expected": {
            "assignment": {"zookeeper": counts(audit, "zookeeper"), "kafka": counts(audit, "kafka")},
            "offset_regressions": len(marts["offset_regressions"]),
            "quarantined": 1,
            "znodes": zk["znodes"],
            "offset_commit_records": len(decodable),
            "offset_commit_tombstones": sum(1 for c in decodable if c.offset is None),
            "transactional_commits": {
                s: sum(1 for c in decodable if c.txn == s) for s in ("committed", "aborted", "pending")
            },
            "group_metadata_records": kafka["group_records"],
            "control_records": kafka["control_records"],
            "corrupt_batch_records": sum(1 for c in commits if c.corrupt),
            "offset_storage_drift": len(marts["offset_storage_drift"]),
        },
        "assignment_audit": audit,
        "quarantine": [
            {
                "source": "offsets",
                "file": seg,
                "byte_offset": pos,
                "records_lost": lost,
                "reason": "CRC mismatch (one byte flipped inside the records of the batch)",
            }
        ],
        **marts,
        "history": history(zk_changes, zk["history_end_ms"], audit, marts["consumer_lag"], log_ends),
        "kraft": build_kraft(data),
    }
    (demo / "faults.json").write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    return manifest


def generate_kraft(demo: Path) -> dict:
    """Rewrite only ``demo/data/kraft/`` and the manifest's ``kraft`` part (the ZooKeeper files
    come from a real server and differ on every run: the rest stays as committed)."""
    manifest = json.loads((demo / "faults.json").read_text())
    shutil.rmtree(demo / "data" / KRAFT_ROOT, ignore_errors=True)
    manifest["kraft"] = build_kraft(demo / "data")
    (demo / "faults.json").write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    return manifest
