"""Counts the build takes from Parquet footers instead of a pass over the rows; the writer's
conform (declared columns, an era's unfilled ones null, any other missing one an error)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.spark.io import conform, staged_non_null, staged_rows


def test_non_null_values_come_from_the_footers_or_the_column_where_a_file_has_no_statistics(warehouse):
    owners = pa.table({"expected_owner": ["c-0", None, "c-1", None, None], "status": ["ok"] * 5})
    with warehouse.transaction("r", step="build_core") as tx:
        staged = tx.staging_dir("core/assignment_audit")
        staged.mkdir(parents=True, exist_ok=True)
        pq.write_table(owners, staged / "part-0.parquet", row_group_size=2)  # 3 row groups with null counts
        pq.write_table(owners.slice(0, 3), staged / "part-1.parquet", write_statistics=False)
        (staged / "_SUCCESS").write_text("")
        assert pq.ParquetFile(staged / "part-1.parquet").metadata.row_group(0).column(0).statistics is None
        assert staged_rows(tx, "core/assignment_audit") == 8
        assert staged_non_null(tx, "core/assignment_audit", "expected_owner") == 2 + 2
        assert staged_non_null(tx, "core/assignment_audit", "status") == 8


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
