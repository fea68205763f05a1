"""`kaudit validate` on an Iceberg warehouse writes its results as the Iceberg table
`quality.validation_results` of the catalog, committed in the step's ledger row: on a run with
planted faults (test_validate_cli.py's run, whose Parquet variant checks the same table there),
the table's rows are what Great Expectations itself returned (gx_oracle.py: GX's own validation
results store). Real Spark with Iceberg's runtime, real GX, pyiceberg's SQLite catalog."""

from __future__ import annotations

import pyarrow as pa
import pytest
import test_validate_cli as planted  # (tests/integration: the planted faults and their expected checks)
from gx_oracle import TABLE, check_results_table, table_rows

from pipelines.quality.marts import MARTS

pytestmark = pytest.mark.integration

RUN = "faulty"


def _write_mart(warehouse, run_id, name, rows):
    """A mart through the warehouse's writer: an Iceberg table of the catalog, in the run's ledger."""
    warehouse.write_table(f"marts/{name}", run_id, pa.Table.from_pylist(rows, schema=MARTS[name]), MARTS[name])


def test_on_iceberg_the_validation_results_are_a_table_of_the_catalog(spark, tmp_path, monkeypatch):
    from pipelines.warehouse.iceberg.catalog import bind_catalog
    from pipelines.warehouse.warehouse import Warehouse

    monkeypatch.setattr(planted, "_write_mart", _write_mart)
    warehouse = Warehouse(tmp_path / "wh")
    planted.write_run(warehouse, RUN, faulty=True)
    bind_catalog(spark, warehouse.catalog_config)
    assert planted._cli(warehouse, RUN, "validate") == 0
    check_results_table(warehouse, RUN, planted.PLANTED, planted.NO_DATA)
    # an Iceberg table of the catalog, at the snapshot the step's ledger row names
    sid = warehouse.snapshots(RUN)[("validate", TABLE)]
    ice = warehouse.catalog.load_table(("quality", "validation_results"))
    assert ice.snapshot_by_id(sid) is not None
    assert ice.scan(snapshot_id=sid).to_arrow().num_rows == len(table_rows(warehouse, RUN)) == \
        len(planted.PLANTED) + len(planted.NO_DATA)
    assert not warehouse.table_dir(TABLE).joinpath(f"run_id={RUN}").exists()  # no Parquet partition
