"""``kaudit demo``: the whole chain on the demo cluster finds exactly the planted faults."""

from __future__ import annotations

import csv
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


@pytest.mark.timeout(1500)
def test_demo_runs_the_kraft_cluster_in_a_run_of_its_own(demo_run):
    """The KRaft cluster's run (``<demo run>-kraft``): its report shows the planted KRaft and
    KIP-848 findings of the manifest (computed by the generator), on the page and in findings.csv."""
    kraft = demo_run.manifest["kraft"]
    expected = kraft["expected"]
    run_id = f"{demo_run.run_id}-kraft"
    log = f"exit {demo_run.exit_code}\n--- output\n{demo_run.output[-6000:]}"
    assert demo_run.exit_code == 0, log
    report = demo_run.warehouse / "reports" / f"run_id={run_id}"
    printed = "".join(demo_run.output.split())  # rich may wrap
    assert str(report / "index.html") in printed, log
    isr, deleted, group_findings = (
        expected["isr_below_min_insync"],
        expected["deleted_topic_commits"],
        expected["group_findings"],
    )
    assert f"kraft:{len(isr)}partition(s)withISRbelowmin.insync.replicas,{len(deleted)}partition(s)" in printed, log
    assert "differsfromtheplanted" not in printed, log

    summary = json.loads((report / "summary.json").read_text())
    assert summary["run_id"] == run_id
    assert {s: summary["assignment"]["kafka"].get(s, 0) for s in expected["assignment"]["kafka"]} == expected[
        "assignment"
    ]["kafka"]
    assert summary["offset_regressions"] == expected["offset_regressions"]
    assert summary["inputs"]["quarantined"] == expected["quarantined"] == 0
    assert summary["inputs"]["znodes"] == 0
    assert summary["inputs"]["offset_records"] == expected["offset_commit_records"] + expected["kip848_group_records"]

    from pipelines.warehouse import Warehouse

    key = ("source", "group_id", "topic", "partition")
    audit = read_arrow(Warehouse(demo_run.warehouse), "core/assignment_audit", run_id).to_pylist()
    got = {
        tuple(r[k] for k in key): (r["status"], r["expected_owner"], sorted(r["observed_owners"] or [])) for r in audit
    }
    planted = {
        tuple(r[k] for k in key): (r["status"], r["expected_owner"], r["observed_owners"])
        for r in kraft["assignment_audit"]
    }
    assert got == planted

    # audit-log deleted and re-created: two topic ids; the aborted metadata transaction not applied
    wh = Warehouse(demo_run.warehouse)
    topics = read_arrow(wh, "raw/kraft_topics", run_id).to_pylist()
    assert sorted(t["topic_id"] for t in topics if t["topic"] == "audit-log") == sorted(
        [kraft["topics"]["audit-log"]["topic_id"], kraft["deleted_topic_ids"]["audit-log"]]
    )
    states = read_arrow(wh, "raw/metadata_records", run_id, ["txn_state"]).column("txn_state").to_pylist()
    assert states.count("aborted") == kraft["metadata"]["aborted_records"]
    assert "orders-v2" not in {t["topic"] for t in topics}

    with (report / "findings.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [
        (r["status"], r["group_id"], r["topic"], r["partition"], r["committed_offset"])
        for r in rows
        if r["source"] == "kraft"
    ] == [
        *[("isr_below_min_insync", "", p["topic"], str(p["partition"]), "") for p in isr],
        *[
            ("deleted_topic_commits", d["group_id"], d["topic"], str(d["partition"]), str(d["last_offset"]))
            for d in deleted
        ],
    ]
    names = {f["finding"] for f in group_findings}
    got_findings = sorted(
        (r["group_id"], r["status"], r["topic"], r["partition"], r["observed_owners"], r["detail"])
        for r in rows
        if r["source"] == "kafka" and r["status"] in names
    )
    assert got_findings == sorted(
        (f["group_id"], f["finding"], f["topic"], str(f["partition"]), f["member_id"] or "", f["detail"])
        for f in group_findings
    )
    assert {f["group_id"] for f in group_findings} == {"order-router"}  # invoicing is healthy

    html = (report / "index.html").read_text()
    assert 'id="kraft"' in html and 'id="group-findings"' in html
    assert html.count('<tr class="kraft-isr">') == len(isr)
    assert html.count('<tr class="kraft-deleted">') == len(deleted)
    assert html.count('<tr class="group-finding"') == len(group_findings)
    for f in group_findings:
        assert f'data-group="{f["group_id"]}" data-finding="{f["finding"]}"' in html
