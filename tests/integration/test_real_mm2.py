"""MirrorMaker 2 between two real KRaft clusters (Kafka 4.3.1 and the connect-mirror jars of the
same release): a topic and groups replicated with sync.group.offsets.enabled, a phase where
replication falls behind (MirrorMaker stopped while the source produces and commits), a target
offset set ahead and a wrong checkpoint planted (``testkit.cluster.mm2``). kaudit extracts both
clusters (``--cluster source|target``) and builds; every raw record and every
``core/mm2_failover`` row and finding is compared with the oracle (``testkit.cluster.mm2_oracle``:
the clusters' Admin API answers, the records as the Java clients read them and kafka-python
decoded them, and what the scenario did)."""

from __future__ import annotations

import json

import pytest

from pipelines.clusters import cluster_warehouse
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.kraft_oracle import kaudit
from testkit.cluster.mm2 import run_mm2_scenario
from testkit.cluster.mm2_oracle import compare, compare_raw, expected_rows, extract

pytestmark = [pytest.mark.integration, pytest.mark.matrix]


def test_real_mirror_maker_failover_matches_the_clusters(tmp_path):
    outcome = run_mm2_scenario(tmp_path / "clusters")
    oracle = outcome.oracle
    (tmp_path / "oracle.json").write_text(json.dumps(oracle, indent=1))  # kept beside the data dirs
    # the scenario did what it says: the groups' offsets on the source are the ones committed,
    # the target holds the translated offsets of the three checkpointed groups only
    assert oracle["source_offsets"]["g-lagging"] == {f"orders:{p}": 80 for p in range(3)}
    assert oracle["target_offsets"]["x-orphan"] == {}
    assert oracle["offset_syncs"] and oracle["checkpoints"]
    wh = tmp_path / "warehouse"
    extract(kaudit, outcome.source.log_dirs[0], outcome.target.log_dirs[0], wh)
    code, out = kaudit("--warehouse", str(wh), "--run-id", "mm2", "--spark-master", "local[2]", "build", "--skip-dbt")
    assert code == 0, out[-3000:]
    main = Warehouse(wh)
    raw = compare_raw(oracle, read_arrow(cluster_warehouse(main, "source"), "raw/mm2_offset_syncs", "mm2").to_pylist(),
                      read_arrow(cluster_warehouse(main, "target"), "raw/mm2_checkpoints", "mm2").to_pylist())
    assert raw == []
    rows = read_arrow(main, "core/mm2_failover", "mm2").to_pylist()
    findings = read_arrow(main, "core/mm2_findings", "mm2").to_pylist()
    assert compare(oracle, rows, findings) == []
    planted = {("never_checkpointed", "x-orphan", p) for p in range(3)} | {
        ("target_ahead_of_translation", "g-ahead", 0), ("checkpoint_disagrees", "g-healthy", 2)}
    assert planted <= {(f["finding"], f["group_id"], f["partition"]) for f in findings}
    assert len(rows) == len(expected_rows(oracle)) == 12
