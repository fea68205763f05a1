"""``kaudit demo``: the whole chain on the demo cluster finds exactly the planted faults."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipelines.reading import read_arrow

pytestmark = pytest.mark.integration


@pytest.mark.timeout(1500)
def test_demo_runs_every_step_and_counts_the_planted_faults(demo_run):
    """``kaudit demo`` as the session's demo_run fixture ran it (in this process, once)."""
    manifest = demo_run.manifest
    expected = manifest["expected"]
    warehouse, out, run_id = demo_run.warehouse, demo_run.out, demo_run.run_id
    log = f"exit {demo_run.exit_code}\n--- output\n{demo_run.output[-6000:]}"
    assert demo_run.exit_code == 0, log  # findings are not errors

    assert (out / ".kaudit-demo").is_file() and (out / "zookeeper" / "version-2").is_dir()
    report = warehouse / "reports" / f"run_id={run_id}"
    assert (report / "index.html").is_file() and (report / "index.html").stat().st_size > 0, log
    assert str(report / "index.html") in "".join(demo_run.output.split()), log  # rich may wrap it
    summary = json.loads((report / "summary.json").read_text())

    assert summary["run_id"] == run_id
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

    audit = read_arrow(Warehouse(warehouse), "core/assignment_audit", run_id).to_pylist()
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
    rows = pq.read_table(warehouse / "raw" / "quarantine" / f"run_id={run_id}").to_pylist()
    assert len(rows) == 1 and rows[0]["location"].endswith(f"{q['file']}:{q['byte_offset']}"), rows
