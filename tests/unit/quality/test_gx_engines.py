"""GX's two engines judge the same rows alike: a small run's views are judged with pandas, a big
run's with Spark (``pipelines.quality.materialized``), and results.json must not depend on which."""

from __future__ import annotations

import pyarrow as pa


def test_pandas_and_spark_give_the_same_results_also_for_an_empty_view(spark, tmp_path):
    import great_expectations.expectations as gxe

    from pipelines.quality.gx_runner import GxProject
    from pipelines.quality.materialized import ROW_ID
    from pipelines.quality.spec import Check

    def checks() -> list[Check]:  # an expectation belongs to one GX suite: new ones per evaluation
        return [
            Check("status_ok", "v", gxe.ExpectColumnValuesToBeInSet(column="status", value_set=["ok"])),
            Check("lag_non_negative", "v", gxe.ExpectColumnValuesToBeBetween(column="lag", min_value=0)),
        ]

    rows = {
        "rows": pa.table({"status": ["ok", "bad", None, "ok"], "lag": [1, -2, None, 3], ROW_ID: [0, 1, 2, 3]}),
        "empty": pa.table({"status": pa.array([], pa.string()), "lag": pa.array([], pa.int64()),
                           ROW_ID: pa.array([], pa.int64())}),
    }
    # (check, success, unexpected_count, element_count, failing row ids): the null is no failure
    expected = {
        "rows": [("status_ok", False, 1, 4, [1]), ("lag_non_negative", False, 1, 4, [1])],
        "empty": [("status_ok", True, 0, 0, []), ("lag_non_negative", True, 0, 0, [])],
    }
    project = GxProject.for_root(tmp_path / "validation", ["v"])
    for name, table in rows.items():
        for frame in (table.to_pandas(), spark.createDataFrame(table)):
            results = project.run_checks("engines", "v", frame, checks(), "test")
            got = [(r.check.name, r.success, r.unexpected_count, r.element_count, r.row_ids) for r in results]
            assert got == expected[name], (name, type(frame))
