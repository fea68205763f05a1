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
from testkit.demo.spec import KAFKA_GROUPS, OFFSETS_TOPIC_PARTITIONS, TOPICS
from testkit.demo.zookeeper import build_zookeeper
from testkit.oracle import counts, expected_marts, kafka_audit, zk_audit
from testkit.segments import group_partition


def generate(demo: Path) -> dict:
    """Write ``demo/data/`` (replaced) and ``demo/faults.json``; returns the manifest."""
    data = demo / "data"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="kaudit-demo-zk-") as tmp:
        tree, zk = build_zookeeper(Path(tmp), data)
    log_ends = build_data_segments(data)
    kafka = build_offsets_segments(data)
    commits = kafka["commits"]
    audit = zk_audit(tree) + kafka_audit(KAFKA_GROUPS, TOPICS, kafka["tombstoned_groups"])
    marts = expected_marts(commits, tree, log_ends)
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
