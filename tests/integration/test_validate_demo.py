"""`kaudit validate` on marts built by a real `dbt build` (the session's demo_run): the checks
that read marts and the audit flag exactly what the demo cluster's manifest planted."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]


def test_checks_on_real_marts_flag_the_planted_faults(demo_run):
    assert demo_run.exit_code == 0, demo_run.output[-4000:]
    part = demo_run.warehouse / "validation" / f"run_id={demo_run.run_id}"
    results = {r["expectation"]: r for r in json.loads((part / "results.json").read_text())}
    manifest = demo_run.manifest

    # marts/offset_regressions: the planted regression is the one failing row
    (planted,) = manifest["offset_regressions"]
    assert results["no_offset_regressions"]["success"] is False
    rows = pq.read_table(part / "failures" / "no_offset_regressions.parquet").to_pylist()
    assert [(r["group_id"], r["topic"], r["partition"], r["previous_committed_offset"], r["committed_offset"])
            for r in rows] == [(planted["group_id"], planted["topic"], planted["partition"],
                                planted["previous_committed_offset"], planted["committed_offset"])]

    # marts/consumer_lag: every planted partition judged, none negative or beyond its log end
    for check in ("lag_non_negative", "committed_within_log_end"):
        assert results[check]["success"] is True, results[check]
        assert results[check]["element_count"] == len(manifest["consumer_lag"]), results[check]

    # core/assignment_audit and the owners
    bad = [r for r in manifest["assignment_audit"] if r["status"] != "ok"]
    assert results["assignment_status_ok"]["unexpected_count"] == len(bad)
    ghosts = sorted(o for r in bad if r["status"] == "unknown_owner" for o in r["observed_owners"])
    owners = pq.read_table(part / "failures" / "owners_are_registered.parquet").column("owner").to_pylist()
    assert sorted(owners) == ghosts
    assert results["no_quarantined_inputs"]["unexpected_count"] == manifest["expected"]["quarantined"]
