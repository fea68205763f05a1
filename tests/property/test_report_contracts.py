"""``kaudit report`` on any run the contracts allow: tables generated from the declared
schemas (raw, core, the marts' dbt contracts), nulls in every column, empty and absent tables
included, never raise. ``KAUDIT_PROPERTY_EXAMPLES`` sets the number of runs (``make fuzz``)."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path

from contract_tables import runs, write_run
from hypothesis import HealthCheck, given, settings

from pipelines.context import RunContext
from pipelines.steps import report
from pipelines.warehouse.warehouse import Warehouse

EXAMPLES = int(os.environ.get("KAUDIT_PROPERTY_EXAMPLES", "25"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.data_too_large])
@given(run=runs())
def test_report_renders_every_run_the_contracts_allow(run):
    with tempfile.TemporaryDirectory() as tmp:
        wh = Warehouse(Path(tmp) / "warehouse")
        write_run(wh, "r", run)
        report(RunContext(wh, "r", quiet=True))
        out = wh.partition_dir("reports", "r")
        html = (out / "index.html").read_text()
        assert html.rstrip().endswith("</html>")
        summary = json.loads((out / "summary.json").read_text())
        audited = run["core/assignment_audit"].num_rows
        assert sum(sum(v.values()) for v in summary["assignment"].values()) <= audited
        with (out / "findings.csv").open() as f:
            assert next(csv.reader(f))[0] == "source"
