"""The validation views (``pipelines.quality.views``) and the whole GX run (``kaudit validate``,
then ``kaudit report`` on its results) on runs drawn from the declared contracts: nulls in
every column, empty and absent tables, never raise. Spark is slow: few examples by default,
more with ``KAUDIT_PROPERTY_SPARK_EXAMPLES`` (``make fuzz``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from contract_tables import runs, write_run
from hypothesis import HealthCheck, Phase, given, settings

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.quality.materialized import materialize
from pipelines.quality.sources import RunTables
from pipelines.quality.views import VIEWS, build_view, missing_data
from pipelines.warehouse.warehouse import Warehouse

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("KAUDIT_PROPERTY_SPARK_EXAMPLES", "3"))
VIEW_TABLES = sorted({t for v in VIEWS.values() for t in (*v.tables, *v.evidence, *v.present)})
# no shrinking: an example is Spark's (and GX's) work on a whole run; a failing one is printed as drawn
SLOW = dict(deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                   HealthCheck.function_scoped_fixture])


@settings(max_examples=EXAMPLES, **SLOW)
@given(run=runs(VIEW_TABLES, always=()))
def test_every_view_computes_on_every_run_the_contracts_allow(spark, run):
    with tempfile.TemporaryDirectory() as tmp:
        wh = Warehouse(Path(tmp) / "warehouse")
        write_run(wh, "r", run)
        tables = RunTables(wh, "r", spark)
        views = {name: build_view(name, tables) for name in VIEWS}
        computed = materialize(views, small=True)
        for name, view in computed.items():
            assert view.table.num_rows >= 0, name
            if missing_data(name, tables.rows) is None:
                assert any(run[t] is not None and run[t].num_rows for t in VIEWS[name].evidence) or \
                    not VIEWS[name].evidence, name


@settings(max_examples=max(EXAMPLES // 2, 1), **SLOW)
@given(run=runs())
def test_validate_then_report_on_every_run_the_contracts_allow(spark, run):
    from pipelines.steps import report, validate

    with tempfile.TemporaryDirectory() as tmp:
        wh = Warehouse(Path(tmp) / "warehouse")
        write_run(wh, "r", run)
        ctx = RunContext(wh, "r", quiet=True)
        try:
            validate(ctx)
        except InputError as err:  # a run none of whose checks has data: said, not a crash
            assert "no data for any expectation" in str(err)
            return
        report(ctx)
        assert (wh.partition_dir("validation", "r") / "results.json").is_file()
        assert (wh.partition_dir("reports", "r") / "index.html").is_file()
