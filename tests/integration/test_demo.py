"""``kaudit demo``: the whole chain on the demo cluster finds exactly the planted faults."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from pipelines.demo.estate import CASES
from pipelines.warehouse.reading import read_arrow
from testkit.oracle import storms

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


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
    from pipelines.warehouse.warehouse import Warehouse

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
    rows = read_arrow(Warehouse(warehouse), "raw/quarantine", run_id, with_run_id=False).to_pylist()
    assert len(rows) == 1 and rows[0]["location"].endswith(f"{q['file']}:{q['byte_offset']}"), rows


def test_both_dbt_builds_of_the_demo_run_on_the_one_parse_made_during_the_core_builds(demo_run):
    """``dbt_runner.parse_ahead`` parses the project while the Spark core builds run, once for
    every run (nothing of a run is in the parse): no build parses again, although the ZooKeeper
    and KRaft runs went side by side (the real brokers' runs after the KRaft one); and dbt's
    invocations took turns: the lines of each are its own."""
    invocations: list[list[str]] = []  # each dbt invocation's lines, its first naming its thread
    for line in (demo_run.warehouse / "logs" / "dbt" / "dbt.log").read_text().splitlines():
        if "Running with dbt=" in line:
            invocations.append([])
        if invocations:
            invocations[-1].append(line)
    ahead = [lines for lines in invocations if "[dbt-parse" in lines[0]]
    builds = [lines for lines in invocations if "[dbt-parse" not in lines[0]]
    assert (len(ahead), len(builds)) == (1, 2 + len(CASES)), [lines[0] for lines in invocations]
    for lines in builds:
        assert not [line for line in lines if "partial parsing" in line or "full parse" in line], lines[:20]
    for lines in invocations:  # the thread that invoked dbt, besides dbt's own workers (Thread-N)
        invokers = {m[1] for line in lines if (m := re.search(r"\] \[([^\]]+)\]:", line))}
        assert len({t for t in invokers if not t.startswith("Thread-")}) == 1, (invokers, lines[0])


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
    # its extracts went on beside the ZooKeeper run, its build once the ZooKeeper build was over
    turn = re.search(r"extractlog-end[\d.]+s,waitsfortheZooKeeperbuild([\d.]+)s,build[\d.]+s,validate", printed)
    assert turn is not None and float(turn[1]) > 0, log

    summary = json.loads((report / "summary.json").read_text())
    assert summary["run_id"] == run_id
    assert {s: summary["assignment"]["kafka"].get(s, 0) for s in expected["assignment"]["kafka"]} == expected[
        "assignment"
    ]["kafka"]
    assert summary["offset_regressions"] == expected["offset_regressions"]
    assert summary["inputs"]["quarantined"] == expected["quarantined"] == 0
    assert summary["inputs"]["znodes"] == 0
    assert summary["inputs"]["offset_records"] == expected["offset_commit_records"] + expected["kip848_group_records"]

    from pipelines.warehouse.warehouse import Warehouse

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
    # the owners of the groups' last generation or epoch (still owned at the end) are the planted ones
    history = read_arrow(Warehouse(demo_run.warehouse), "marts/ownership_history", run_id).to_pylist()
    last: dict[tuple, list[str]] = {}
    for r in history:
        if r["owned_until"] is None:
            last.setdefault(tuple(r[k] for k in key), []).append(r["owner"])
    assert {k: sorted(v) for k, v in last.items()} == {k: v[2] for k, v in planted.items() if v[2]}

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


class _Rows(HTMLParser):
    """The text of each cell of the rows (``tr``) and items (``li``) whose class is one of ``classes``."""

    def __init__(self, *classes: str):
        super().__init__()
        self.classes, self.rows = set(classes), {c: [] for c in classes}
        self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        cls = set((dict(attrs).get("class") or "").split()) & self.classes
        if tag in ("tr", "li") and cls:
            self._row = (cls.pop(), [])
            if tag == "li":
                self._cell = ""
        elif self._row and tag == "td":
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if self._row and tag in ("td", "li") and self._cell is not None:
            self._row[1].append(" ".join(self._cell.split()))
            self._cell = None
        if self._row and tag in ("tr", "li"):
            self.rows[self._row[0]].append(self._row[1])
            self._row = None


def _ms(t) -> int:
    return int(t.timestamp() * 1000)


@pytest.mark.timeout(1500)
def test_demo_history_holds_and_the_report_shows_each_planted_fact(demo_run):
    """Issue 21 on the demo: a past wrong owner today's snapshot no longer shows, a rebalance
    storm, a reset to latest, a committed offset below the log start and lag in seconds for
    every group, each in the built tables and the report (page and findings.csv), as the
    generator scripted them (faults.json ``history``)."""
    from pipelines.warehouse.warehouse import Warehouse

    assert demo_run.exit_code == 0, demo_run.output[-4000:]
    wh, run_id, manifest = Warehouse(demo_run.warehouse), demo_run.run_id, demo_run.manifest
    h = manifest["history"]
    per_hour = yaml.safe_load((REPO / "dbt_project.yml").read_text())["vars"]["rebalance_storm_per_hour"]

    # every rebalance of both eras, and the storm
    rebalances = read_arrow(wh, "marts/rebalances", run_id).to_pylist()
    zk = sorted((r for r in rebalances if r["source"] == "zookeeper"), key=lambda r: (r["group_id"], r["state_zxid"]))
    assert [(r["group_id"], r["state_zxid"], _ms(r["started_at"]), r["settled"], r["wrong_owner_partitions"])
            for r in zk] == [(s["group_id"], s["state_zxid"], s["started_at"], s["settled"],
                              s["wrong_owner_partitions"]) for s in h["zookeeper_states"]]
    kafka = sorted((r for r in rebalances if r["source"] == "kafka"), key=lambda r: (r["group_id"], r["started_at"]))
    assert [(r["group_id"], r["generation"], _ms(r["started_at"]), r["trigger"]) for r in kafka] == [
        (k["group_id"], k["generation"], k["started_at"], k["trigger"]) for k in h["kafka_rebalances"]]
    stormy = storms([*h["zookeeper_states"], *h["kafka_rebalances"]], per_hour)
    assert set(stormy) == {("kafka", h["storm_group"])}
    in_hour = [r["rebalances_last_hour"] for r in kafka if r["group_id"] == h["storm_group"]]
    assert in_hour == stormy[("kafka", h["storm_group"])]
    assert {(r["source"], r["group_id"]) for r in rebalances if r["is_storm"]} == set(stormy)

    # the past settled states' owners that were not ok (a transition's are no finding); the
    # wrong owners are gone from today's audit
    past = {(r["group_id"], r["state_zxid"], r["topic"], r["partition"]):
            (r["expected_owner"], r["observed_owner"], r["status"], r["held_until_zxid"])
            for r in read_arrow(wh, "core/settled_audit", run_id).to_pylist()
            if r["status"] != "ok" and r["held_until"] is not None and r["settled"]}
    # no state listed as a past fault is unsettled: the report lists settled states only
    unsettled = {(r["group_id"], r["state_zxid"]) for r in zk if not r["settled"]}
    assert not {(g, z) for g, z, _, _ in past} & unsettled
    assert past == {(p["group_id"], p["state_zxid"], p["topic"], p["partition"]):
                    (p["expected_owner"], p["observed_owner"], p["status"], p["held_until_zxid"])
                    for p in h["past_not_ok"]}
    wrong = [p for p in h["past_not_ok"] if p["group_id"] == h["wrong_owner_group"] and p["status"] == "wrong_owner"]
    audit = read_arrow(wh, "core/assignment_audit", run_id).to_pylist()
    today = [r["status"] for r in audit if r["group_id"] == h["wrong_owner_group"]]
    assert wrong and today and set(today) == {"ok"}

    # the reset to latest, the offset below the log start, lag in seconds
    resets = read_arrow(wh, "marts/offset_resets", run_id).to_pylist()
    keys = ("group_id", "topic", "partition", "reset_to", "previous_committed_offset", "committed_offset",
            "size_records")
    assert [tuple(r[k] for k in keys) + (_ms(r["committed_at"]),) for r in resets] == [
        tuple(x[k] for k in keys) + (x["committed_at"],) for x in h["offset_resets"]]
    assert [r["size_seconds"] for r in resets] == pytest.approx([x["size_seconds"] for x in h["offset_resets"]])
    risk = read_arrow(wh, "marts/data_loss_risk", run_id).to_pylist()
    keys = ("source", "group_id", "topic", "partition", "committed_offset", "log_start_offset", "records_lost")
    assert sorted(tuple(r[k] for k in keys) for r in risk if r["status"] == "lost") == sorted(
        tuple(x[k] for k in keys) for x in h["data_lost"])
    lag = {(r["source"], r["group_id"], r["topic"], r["partition"], r["broker_id"]): r["lag_seconds"]
           for r in read_arrow(wh, "marts/consumer_lag", run_id).to_pylist()}
    planted = {(r["source"], r["group_id"], r["topic"], r["partition"], r.get("broker_id")): r["lag_seconds"]
               for r in manifest["consumer_lag"]}
    assert lag.keys() == planted.keys()
    for key, seconds in planted.items():
        assert lag[key] == (None if seconds is None else pytest.approx(seconds)), key
    # every group whose offsets address records has them (0.7 offsets are byte positions)
    timed = {(r["source"], r["group_id"]) for r in manifest["consumer_lag"] if r["lag_seconds"] is not None}
    assert timed == {(r["source"], r["group_id"]) for r in manifest["consumer_lag"] if r.get("broker_id") is None}

    # the page
    page = _Rows("past-wrong", "storm", "offset-reset", "data-loss", "lag-time")
    page.feed((demo_run.report_dir / "index.html").read_text(encoding="utf-8"))
    shown = [r for r in page.rows["past-wrong"] if r[0] == h["wrong_owner_group"]]
    assert sorted((int(r[2]), r[3], r[4], r[5]) for r in shown) == sorted(
        (p["partition"], "wrong owner", p["expected_owner"], p["observed_owner"]) for p in wrong)
    assert len(page.rows["past-wrong"]) == len(h["past_not_ok"])
    (storm,) = page.rows["storm"]
    assert storm[0].startswith(f"{h['storm_group']} (kafka): ")
    assert f"up to {max(stormy[('kafka', h['storm_group'])])} in one hour" in storm[0]
    (reset,) = page.rows["offset-reset"]
    x = h["offset_resets"][0]
    assert reset[1:5] == [x["group_id"], x["topic"], str(x["partition"]), "latest"]
    assert reset[6] == f"{x['size_records']:+,}"
    (loss,) = page.rows["data-loss"]
    d = h["data_lost"][0]
    assert loss[:4] == ["lost", f"{d['group_id']}{d['source']}", d["topic"], str(d["partition"])]
    assert loss[6] == f"{d['records_lost']:,}"
    assert {(r[0], r[1]) for r in page.rows["lag-time"]} == timed

    # findings.csv
    with (demo_run.report_dir / "findings.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["group_id"], int(r["partition"]), r["expected_owner"], r["observed_owners"])
                  for r in rows if r["status"] == "past_wrong_owner") == sorted(
        (p["group_id"], p["partition"], p["expected_owner"], p["observed_owner"])
        for p in h["past_not_ok"] if p["status"] == "wrong_owner")
    assert sum(r["status"].startswith("past_") for r in rows) == len(h["past_not_ok"])
    assert [(r["source"], r["group_id"]) for r in rows if r["status"] == "rebalance_storm"] == [
        ("kafka", h["storm_group"])]
    assert [(r["group_id"], r["topic"], int(r["partition"]), int(r["committed_offset"]))
            for r in rows if r["status"] == "offset_reset"] == [
        (x["group_id"], x["topic"], x["partition"], x["committed_offset"])]
    assert [(r["source"], r["group_id"], r["topic"], int(r["partition"]), int(r["committed_offset"]))
            for r in rows if r["status"] == "data_lost"] == [
        (d["source"], d["group_id"], d["topic"], d["partition"], d["committed_offset"])]
