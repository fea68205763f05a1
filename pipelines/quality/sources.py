"""The run's tables as Spark DataFrames with their declared columns, whoever wrote them.

Every table is read by :func:`pipelines.spark.io.read_spark` (raw and core tables with the
schemas of ``pipelines.warehouse.tables``, marts with their dbt contracts; a file that is not its
declaration is an error; on an Iceberg warehouse, the run's partition at the snapshot its
ledger recorded). A table missing for the run (only one source ran) is an empty frame
with the same columns; :meth:`RunTables.rows` tells the suites whether a view has data to judge
at all (``pipelines.quality.views.missing_data``)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from pipelines.spark.io import read_spark
from pipelines.warehouse.reading import row_count
from pipelines.warehouse.warehouse import Warehouse


class RunTables:
    """Lazy access to one run's tables: ``tables["core/brokers"]``, ``tables["marts/consumer_lag"]``."""

    def __init__(self, warehouse: Warehouse, run_id: str, spark: SparkSession | None = None):
        self.spark, self.warehouse, self.run_id = spark, warehouse, run_id
        self._cache: dict[str, DataFrame] = {}

    def __getitem__(self, table: str) -> DataFrame:
        if table not in self._cache:
            self._cache[table] = read_spark(self.spark, self.warehouse, table, self.run_id, with_run_id=False)
        return self._cache[table]

    def rows(self, table: str) -> int | None:
        """The row count of the run's ``table`` from its Parquet footers (Iceberg: its manifests);
        None when the run does not have the table."""
        return row_count(self.warehouse, table, self.run_id)
