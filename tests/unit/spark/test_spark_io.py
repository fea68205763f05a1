"""Counts the build takes from its commits and the tables' manifests instead of a pass over the
rows; the writer's conform (declared columns, an era's unfilled ones null, any other missing one
an error)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipelines.spark.io import conform, staged_non_null, staged_rows
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.writer import Transaction

AUDIT = "core/assignment_audit"


def _audit(owners: list) -> pa.Table:
    return pa.Table.from_pylist([{"expected_owner": o, "status": "ok"} for o in owners], schema=SCHEMAS[AUDIT])


def test_non_null_values_come_from_the_manifests_or_the_column_where_a_file_has_no_null_counts(warehouse):
    with warehouse.transaction("r", step="build_core") as tx:
        tx.write(AUDIT, _audit(["c-0", None, "c-1", None, None]))
    with warehouse.transaction("r2", step="build_core") as tx:  # no null counts of expected_owner in its file
        tx.writer(AUDIT, statistics=["status"]).write(_audit(["c-0", None, "c-1"]))
    for run_id, rows, owners in (("r", 5, 2), ("r2", 3, 2)):
        step = Transaction(warehouse, run_id, "build_core")
        step.written[AUDIT] = (warehouse.snapshot_id(AUDIT, run_id), rows)  # as the step's Spark write left it
        assert staged_rows(step, AUDIT) == rows
        assert staged_non_null(step, AUDIT, "expected_owner") == owners
        assert staged_non_null(step, AUDIT, "status") == rows
    files = {t.file.file_path: t.file for t in warehouse.catalog.load_table(("core", "assignment_audit")).scan(
        snapshot_id=warehouse.snapshot_id(AUDIT, "r2")).plan_files() if "run_id=r2" in t.file.file_path}
    owner_id = warehouse.catalog.load_table(("core", "assignment_audit")).schema().find_field("expected_owner").field_id
    assert all(owner_id not in (f.null_value_counts or {}) for f in files.values())  # the column was read


def test_conform_nulls_only_the_columns_the_era_leaves_out(spark):
    from pyspark.errors import AnalysisException

    from pipelines.spark.schemas import table_schema
    from pipelines.warehouse.tables import ADDED_COLUMNS, ZOOKEEPER_STATE_COLUMNS

    table = "core/settled_audit"
    declared = table_schema(table).names
    kafka = [c for c in declared if c not in ZOOKEEPER_STATE_COLUMNS[table]]
    row = {c: None for c in kafka} | {"source": "kafka", "group_id": "g", "generation": 3, "status": "ok"}
    df = spark.createDataFrame([tuple(row[c] for c in kafka)], ",".join(f"{c} string" for c in kafka))
    out = conform(df, table, ZOOKEEPER_STATE_COLUMNS).collect()[0].asDict()
    assert list(out) == declared
    assert {c: out[c] for c in ZOOKEEPER_STATE_COLUMNS[table]} == dict.fromkeys(ZOOKEEPER_STATE_COLUMNS[table])
    assert (out["source"], out["group_id"], out["generation"], out["status"]) == ("kafka", "g", 3, "ok")
    # the ZooKeeper era's default leaves out only the Kafka-era columns: a Kafka frame fails
    assert set(ADDED_COLUMNS[table]) <= set(kafka)
    with pytest.raises(AnalysisException, match="state_zxid"):
        conform(df, table).collect()
    # a column no era leaves out fails in both
    with pytest.raises(AnalysisException, match="status"):
        conform(df.drop("status"), table, ZOOKEEPER_STATE_COLUMNS).collect()
