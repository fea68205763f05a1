"""The MM2 audit on the bytes of a real MirrorMaker 2 run (``pipelines/demo/real/mm2-4.3.1``, see its
README), as the demo's migration run holds it (the session's ``demo_run``: the pair extracted as
the clusters ``source`` and ``target``, then built): kaudit's extract of both clusters against the
records the Java clients read and kafka-python decoded, and the audit's rows and findings against
the clusters' Admin API answers and the planted faults (``testkit.cluster.mm2_oracle``)."""

from __future__ import annotations

import json

import pytest

from pipelines.clusters import cluster_warehouse
from pipelines.demo import REAL
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.mm2_oracle import compare, compare_raw, expected_findings, expected_rows

pytestmark = pytest.mark.integration
FIXTURE = REAL / "mm2-4.3.1"


def test_real_mm2_bytes_audited_against_the_clusters(demo_run):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    run_id = demo_run.estate_run("migration")  # the run the pair joins (pipelines.demo.estate)
    main = Warehouse(demo_run.warehouse)
    syncs = read_arrow(cluster_warehouse(main, "source"), "raw/mm2_offset_syncs", run_id).to_pylist()
    checkpoints = read_arrow(cluster_warehouse(main, "target"), "raw/mm2_checkpoints", run_id).to_pylist()
    assert compare_raw(oracle, syncs, checkpoints) == []
    assert (len(syncs), len(checkpoints)) == (len(oracle["offset_syncs"]), len(oracle["checkpoints"])) == (14, 10)
    rows = read_arrow(main, "core/mm2_failover", run_id, with_run_id=False).to_pylist()
    findings = read_arrow(main, "core/mm2_findings", run_id, with_run_id=False).to_pylist()
    assert compare(oracle, rows, findings) == []
    assert len(rows) == len(expected_rows(oracle)) == 12 and len(findings) == len(expected_findings(oracle)) == 5
