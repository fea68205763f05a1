"""Counts the build takes from Parquet footers instead of a pass over the rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.spark.io import staged_non_null, staged_rows


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
