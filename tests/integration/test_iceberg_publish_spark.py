"""Write-audit-publish of a Spark step on an Iceberg warehouse, on the test session's real local
Spark with Iceberg's runtime: a Spark write of a step goes to the step's branch, so Spark SQL
without ``VERSION AS OF`` and pyiceberg's ``scan()`` (a table's current state, ``main``) show the
previous step's rows until the step is published; then ``main`` is the snapshot the ledger names.
Another run publishing the same table while the step runs keeps its rows (the step's snapshot
is rebased onto it). The expected rows are the rows the test writes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipelines.warehouse.iceberg import publish
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

pytestmark = pytest.mark.integration

TABLE, STEP = "core/partition_owners", "build"


def _owners(owners: list[str]) -> list[dict]:
    return [{"group_id": "g", "topic": "t", "partition": i, "broker_id": None, "owner": owner}
            for i, owner in enumerate(owners)]


def _spark_rows(spark, run_id: str, ref: str = "") -> list[str]:
    """``run_id``'s owners in ``kaudit.core.partition_owners`` (its current state, or ``ref``)."""
    rows = spark.sql(f"SELECT owner FROM kaudit.core.partition_owners{ref} WHERE run_id = '{run_id}'").collect()
    return sorted(r.owner for r in rows)


def _pyiceberg_rows(wh: Warehouse, run_id: str) -> list[str]:
    ice = wh.catalog.load_table(wh.ident(TABLE))
    return sorted(ice.scan(row_filter=f"run_id = '{run_id}'").to_arrow().column("owner").to_pylist())


def test_a_spark_step_is_invisible_on_main_until_published(spark, tmp_path):
    from pipelines.spark.schemas import table_schema
    from pipelines.warehouse.iceberg.catalog import bind_catalog

    wh = Warehouse(tmp_path / "warehouse")
    bind_catalog(spark, wh.catalog_config)
    with wh.transaction("r1", STEP) as tx:
        tx.write(TABLE, pa.Table.from_pylist(_owners(["old-0", "old-1"]), schema=SCHEMAS[TABLE]))
    before = wh.snapshot_id(TABLE, "r1")

    with wh.transaction("r1", STEP) as tx:
        wh.write_spark(tx, TABLE, spark.createDataFrame(_owners(["new-0"]), table_schema(TABLE)))
        wh.write_spark(tx, TABLE, spark.createDataFrame(_owners(["new-1"]), table_schema(TABLE)), append=True)
        # the step's writes are on its branch; main (current state) still the previous step's
        assert _spark_rows(spark, "r1") == ["old-0", "old-1"] == _pyiceberg_rows(wh, "r1")
        name = publish.branch("r1", STEP)
        assert _spark_rows(spark, "r1", f".`branch_{name}`") == ["new-0", "new-1"]
        assert wh.snapshot_id(TABLE, "r1") == before
        # another run publishes the same table meanwhile
        with wh.transaction("r2", STEP) as other:
            other.write(TABLE, pa.Table.from_pylist(_owners(["r2-0"]), schema=SCHEMAS[TABLE]))
        assert _spark_rows(spark, "r2") == ["r2-0"]

    assert _spark_rows(spark, "r1") == ["new-0", "new-1"] == _pyiceberg_rows(wh, "r1")
    assert _spark_rows(spark, "r2") == ["r2-0"]  # kept: r1's snapshot was rebased onto r2's
    refs = wh.catalog.load_table(wh.ident(TABLE)).metadata.refs
    assert {n: r.snapshot_id for n, r in refs.items()} == {"main": wh.snapshot_id(TABLE, "r1")}
    assert sorted(wh.read_arrow(TABLE, "r1").column("owner").to_pylist()) == ["new-0", "new-1"]
    assert wh.row_count(TABLE, "r1") == 2


def test_a_write_of_no_rows_by_its_plan_commits_only_to_replace_rows(spark, tmp_path):
    """A frame over an empty table of the run (no job runs to know it) is written without a
    commit where no snapshot holds the run's rows, and replaces them where one does; an
    ``append`` of it adds nothing. A frame that only turns out empty is committed."""
    from pipelines.spark.io import known_empty, read_staged, staged_rows, write_staged
    from pipelines.spark.schemas import empty, table_schema
    from pipelines.warehouse.iceberg.catalog import bind_catalog

    wh = Warehouse(tmp_path / "warehouse")
    bind_catalog(spark, wh.catalog_config)
    none = empty(spark, TABLE)
    filtered = spark.createDataFrame(_owners(["x"]), table_schema(TABLE)).where("owner = 'y'")
    assert known_empty(none.join(filtered.select("group_id", "partition"), "group_id").groupBy("topic").count())
    assert not known_empty(filtered) and not known_empty(spark.range(0))

    def snapshots() -> int:
        return len(wh.catalog.load_table(wh.ident(TABLE)).metadata.snapshots)

    with wh.transaction("r1", STEP) as tx:
        write_staged(tx, TABLE, none)
        assert tx.written[TABLE] == (None, 0) and read_staged(spark, tx, TABLE).count() == 0
        write_staged(tx, TABLE, spark.createDataFrame(_owners(["a"]), table_schema(TABLE)), append=True)
        write_staged(tx, TABLE, none, append=True)
        assert staged_rows(tx, TABLE) == 1
    assert _spark_rows(spark, "r1") == ["a"] == _pyiceberg_rows(wh, "r1")
    with wh.transaction("r2", STEP) as tx:
        write_staged(tx, TABLE, none)
    assert wh.exists(TABLE, "r2") and wh.snapshot_id(TABLE, "r2") is None
    count = snapshots()
    with wh.transaction("r1", STEP) as tx:
        write_staged(tx, TABLE, none)  # replaces the run's row: a commit
    assert snapshots() > count and _spark_rows(spark, "r1") == [] == _pyiceberg_rows(wh, "r1")
    with wh.transaction("r3", STEP) as tx:
        write_staged(tx, TABLE, filtered)
    assert wh.snapshot_id(TABLE, "r3") is not None and wh.row_count(TABLE, "r3") == 0
