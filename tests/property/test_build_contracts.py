"""``kaudit build`` (the Spark core build, then dbt's marts) and ``report`` on raw tables drawn
from their declared schemas at small sizes, unique on the keys the extractors write them with
(``contract_tables.RAW_KEYS``): nulls in every other column, empty and absent tables, never
raise; a run with nothing extracted is said so (exit 1), not a crash. A build is slow
(Spark, dbt): few examples by default, more with ``KAUDIT_PROPERTY_BUILD_EXAMPLES``
(``make fuzz``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from contract_tables import RAW_KEYS, runs, write_run
from hypothesis import HealthCheck, Phase, given, settings

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.steps import EXTRACTED, build, report
from pipelines.warehouse.reading import row_count
from pipelines.warehouse.tables import RAW
from pipelines.warehouse.warehouse import Warehouse

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("KAUDIT_PROPERTY_BUILD_EXAMPLES", "2"))


# no shrinking: an example is a whole build (a failing one is printed as drawn)
@settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(run=runs(sorted(RAW), always=(), max_rows=4, keys=RAW_KEYS))
def test_build_and_report_on_every_raw_run_the_contracts_allow(spark, run):
    with tempfile.TemporaryDirectory() as tmp:
        wh = Warehouse(Path(tmp) / "warehouse")
        write_run(wh, "r", run)
        ctx = RunContext(wh, "r", quiet=True)
        if not any(run[t] is not None and run[t].num_rows for t in EXTRACTED):
            with pytest.raises(InputError, match="nothing extracted to build"):
                build(ctx)
            return
        build(ctx)
        assert row_count(wh, "core/assignment_audit", "r") is not None
        report(ctx)
        assert (wh.partition_dir("reports", "r") / "index.html").is_file()
