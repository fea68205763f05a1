"""summary.json and the page from the warehouse alone (pyarrow, no Spark, no browser)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.report.facts import gather
from pipelines.report.page import render
from pipelines.report.write import write_report
from pipelines.warehouse.tables import SCHEMAS

STATUSES = ("ok", "wrong_owner", "unowned", "duplicate_owner", "unknown_owner", "unexpected_partition")


def test_empty_run_gives_zeros_everywhere(warehouse):
    page = write_report(RunContext(warehouse, "empty", quiet=True))
    summary = json.loads((page.parent / "summary.json").read_text())
    assert summary == {
        "run_id": "empty",
        "inputs": {"znodes": 0, "offset_records": 0, "quarantined": 0},
        "assignment": {"zookeeper": dict.fromkeys(STATUSES, 0), "kafka": dict.fromkeys(STATUSES, 0)},
        "offset_regressions": 0,
        "expectations": {"evaluated": 0, "failed": 0},
    }
    html = page.read_text()
    assert "No data in this run" in html and "holds no znodes, no offset records and no audited partitions" in html
    assert (page.parent / "findings.csv").read_text().splitlines()[1:] == []


def _audit(source, group, partition, status):
    return dict(source=source, group_id=group, topic="t", partition=partition, broker_id=None,
                expected_owner="a", observed_owners=["a"], status=status)


def test_counts_per_source_and_group_names_are_escaped(warehouse):
    rows = [_audit("kafka", "<b>g</b>", 0, "ok"), _audit("kafka", "<b>g</b>", 1, "duplicate_owner"),
            _audit("zookeeper", "z", 0, "unowned")]
    warehouse.write_table(
        "core/assignment_audit", "r", pa.Table.from_pylist(rows, schema=SCHEMAS["core/assignment_audit"])
    )
    quarantine = pa.Table.from_pylist([dict(source="offsets", location="a.log:12", reason="bad crc", raw=None)] * 2,
                                      schema=SCHEMAS["raw/quarantine"])
    warehouse.write_table("raw/quarantine", "r", quarantine, step="offsets")
    warehouse.write_table("raw/quarantine", "r", quarantine.slice(0, 1), step="zk-snapshot")
    t = datetime(2026, 1, 1, tzinfo=UTC)
    warehouse.write_table("marts/offset_regressions", "r", pa.Table.from_pylist(
        [dict(group_id="<i>", topic="t", partition=0, log_offset=3, previous_committed_offset=9, committed_offset=4,
              regressed_by=5, committed_at=t)], schema=MARTS["offset_regressions"]))

    facts = gather(warehouse, "r")
    summary = facts.summary()
    assert summary["assignment"]["kafka"] == {**dict.fromkeys(STATUSES, 0), "ok": 1, "duplicate_owner": 1}
    assert summary["assignment"]["zookeeper"] == {**dict.fromkeys(STATUSES, 0), "unowned": 1}
    assert summary["inputs"]["quarantined"] == 3 and summary["offset_regressions"] == 1
    assert facts.quarantine == [{"source": "offsets", "reason": "bad crc", "count": 3, "example": "a.log:12"}]

    html = render(facts)
    assert "<b>g</b>" not in html and "&lt;b&gt;g&lt;/b&gt;" in html
    assert "<i>" not in html and "&lt;i&gt;" in html


def _check(name, success, level="error", unexpected=None, no_data=None):
    return dict(suite="core", expectation=name, gx_expectation="expect_column_values_to_not_be_null",
                view="audit", columns=["group_id"], level=level, success=success, element_count=10,
                unexpected_count=unexpected, no_data=no_data, description=f"what {name} checks")


def test_the_report_reads_the_validation_results_table(warehouse):
    rows = [_check("owners_known", True, unexpected=0), _check("lag_present", None, no_data="no lag rows"),
            _check("no_duplicates", False, unexpected=3), _check("few_regressions", False, "warning", 1)]
    table = pa.Table.from_pylist(rows, schema=SCHEMAS["quality/validation_results"])
    warehouse.write_table("quality/validation_results", "r", table, step="validate")
    audit = pa.Table.from_pylist([_audit("kafka", "g", 0, "ok")], schema=SCHEMAS["core/assignment_audit"])
    warehouse.write_table("core/assignment_audit", "r", audit)  # (a run with no data shows no sections)
    # the run's results.json is not what the report reads when the table is there
    results = warehouse.partition_dir("validation", "r") / "results.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps([{"suite": "core", "expectation": "stale", "success": False, "level": "error"}]))

    facts = gather(warehouse, "r")
    assert {e.entry["expectation"]: e.entry["success"] for e in facts.expectations} == {
        "no_duplicates": False, "few_regressions": False, "lag_present": None, "owners_known": True}
    assert facts.summary()["expectations"] == {"evaluated": 3, "failed": 2}
    assert facts.errors_failed == 1
    html = render(facts)
    assert 'data-expectation="no_duplicates"' in html and "not evaluated: no lag rows" in html
    assert "stale" not in html


def test_a_run_validated_before_the_table_reads_its_results_json(warehouse):
    results = warehouse.partition_dir("validation", "old") / "results.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps([{"suite": "core", "expectation": "owners_known", "success": False,
                                    "unexpected_count": 2, "level": "error", "description": "d"}]))
    facts = gather(warehouse, "old")
    assert [e.entry["expectation"] for e in facts.expectations] == ["owners_known"]
    assert facts.summary()["expectations"] == {"evaluated": 1, "failed": 1}
