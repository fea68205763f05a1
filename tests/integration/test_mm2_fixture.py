"""The MM2 audit on the bytes of a real MirrorMaker 2 run (``pipelines/demo/real/mm2-4.3.1``, see its
README): kaudit's extract of both clusters (``--cluster source|target``) against the records the
Java clients read and kafka-python decoded, and the audit's rows and findings against the
clusters' Admin API answers and the planted faults (``testkit.cluster.mm2_oracle``)."""

from __future__ import annotations

import json

import pytest

from pipelines.clusters import cluster_warehouse
from pipelines.context import RunContext
from pipelines.demo import REAL
from pipelines.reading import read_arrow
from pipelines.spark import mm2
from pipelines.warehouse import Warehouse
from testkit.cluster.kraft_oracle import kaudit
from testkit.cluster.mm2_oracle import compare, compare_raw, expected_findings, expected_rows, extract

pytestmark = pytest.mark.integration
FIXTURE = REAL / "mm2-4.3.1"


def test_real_mm2_bytes_audited_against_the_clusters(spark, tmp_path):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    extract(kaudit, FIXTURE / "source" / "logs", FIXTURE / "target" / "logs", tmp_path / "wh")
    main = Warehouse(tmp_path / "wh")
    syncs = read_arrow(cluster_warehouse(main, "source"), "raw/mm2_offset_syncs", "mm2").to_pylist()
    checkpoints = read_arrow(cluster_warehouse(main, "target"), "raw/mm2_checkpoints", "mm2").to_pylist()
    assert compare_raw(oracle, syncs, checkpoints) == []
    assert (len(syncs), len(checkpoints)) == (len(oracle["offset_syncs"]), len(oracle["checkpoints"])) == (14, 10)
    frames = mm2.core_frames(spark, RunContext(main, "mm2", quiet=True))
    rows = [r.asDict() for r in frames["core/mm2_failover"].collect()]
    findings = [r.asDict() for r in frames["core/mm2_findings"].collect()]
    assert compare(oracle, rows, findings) == []
    assert len(rows) == len(expected_rows(oracle)) == 12 and len(findings) == len(expected_findings(oracle)) == 5
