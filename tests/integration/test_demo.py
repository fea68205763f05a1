"""``kaudit demo``: the whole chain on the demo cluster finds exactly the planted faults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "pipelines" / "demo" / "faults.json"
RUN_ID = "demo-test"


@pytest.mark.timeout(1500)
def test_demo_runs_every_step_and_counts_the_planted_faults(tmp_path):
    manifest = json.loads(MANIFEST.read_text())
    expected = manifest["expected"]
    warehouse, out = tmp_path / "warehouse", tmp_path / "cluster"
    args = ["--warehouse", str(warehouse), "--run-id", RUN_ID, "--spark-master", "local[2]", "demo", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", f"from pipelines.cli import main; main({args!r})"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1400,
    )
    log = f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}"
    assert proc.returncode == 0, log  # findings are not errors

    assert (out / ".kaudit-demo").is_file() and (out / "zookeeper" / "version-2").is_dir()
    report = warehouse / "reports" / f"run_id={RUN_ID}"
    assert (report / "index.html").is_file() and (report / "index.html").stat().st_size > 0, log
    assert str(report / "index.html") in "".join((proc.stdout + proc.stderr).split()), log  # rich may wrap it
    summary = json.loads((report / "summary.json").read_text())

    assert summary["run_id"] == RUN_ID
    for source, statuses in expected["assignment"].items():
        got = summary["assignment"][source]
        assert {s: got.get(s, 0) for s in statuses} == statuses, (source, got)
    assert summary["offset_regressions"] == expected["offset_regressions"]
    assert summary["inputs"]["quarantined"] == expected["quarantined"]
    zk = manifest["zookeeper"]
    # every znode but the server's own /zookeeper subtree (see README: ZooKeeper rows)
    assert summary["inputs"]["znodes"] == zk["znodes_outside_zookeeper_subtree"]
    # offset records: commits + group metadata (+ coordinator records, none in the demo)
    assert summary["inputs"]["offset_records"] == expected["offset_commit_records"] + expected["group_metadata_records"]
    assert summary["expectations"]["evaluated"] > 0

    # row by row: the audit of every (source, group, topic, partition) is the planted one
    from pipelines.warehouse import Warehouse

    audit = Warehouse(warehouse).read_table("core/assignment_audit", RUN_ID).to_pylist()
    key = ("source", "group_id", "topic", "partition", "broker_id")
    got = {
        tuple(r[k] for k in key): (r["status"], r["expected_owner"], sorted(r["observed_owners"] or [])) for r in audit
    }
    planted = {
        tuple(r[k] for k in key): (r["status"], r["expected_owner"], sorted(r["observed_owners"]))
        for r in manifest["assignment_audit"]
    }
    assert got == planted

    # the quarantined row names the corrupt batch: file and byte position
    q = manifest["quarantine"][0]
    rows = pq.read_table(warehouse / "raw" / "quarantine" / f"run_id={RUN_ID}").to_pylist()
    assert len(rows) == 1 and rows[0]["location"].endswith(f"{q['file']}:{q['byte_offset']}"), rows
