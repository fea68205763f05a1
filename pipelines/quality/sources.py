"""The run's tables as Spark DataFrames with their contract columns, whoever wrote them.

Raw and core tables use the Arrow schemas of ``pipelines.tables``, marts those of
``pipelines.quality.marts`` (a mart file that is not its declared contract is an error, see
``check_schema``). A table missing for the run (only one source ran) is an empty frame with the
same columns; :meth:`RunTables.rows` tells the suites whether a view has data to judge at all
(``pipelines.quality.views.missing_data``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from pipelines.quality.marts import MARTS, check_schema, mart_dir, mart_files
from pipelines.tables import SCHEMAS
from pipelines.warehouse import Warehouse


def spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema)


def conform(df: DataFrame, schema: StructType) -> DataFrame:
    """``df`` as exactly ``schema``'s columns: present ones cast, absent ones null."""
    present = set(df.columns)
    return df.select(
        *[
            (F.col(f"`{f.name}`").cast(f.dataType) if f.name in present else F.lit(None).cast(f.dataType)).alias(f.name)
            for f in schema.fields
        ]
    )


def _parquet_files(part: Path) -> list[str]:
    if not part.is_dir():
        return []
    return sorted(
        str(p) for p in part.rglob("*.parquet") if not any(s.startswith(("_", ".")) for s in p.relative_to(part).parts)
    )


class RunTables:
    """Lazy access to one run's tables: ``tables["core/brokers"]``, ``tables["marts/consumer_lag"]``."""

    def __init__(self, warehouse: Warehouse, run_id: str, spark: SparkSession | None = None):
        self.spark, self.warehouse, self.run_id = spark, warehouse, run_id
        self._cache: dict[str, DataFrame] = {}

    def __getitem__(self, table: str) -> DataFrame:
        if table not in self._cache:
            self._cache[table] = self._read(table)
        return self._cache[table]

    def _files(self, table: str) -> tuple[Path, list[str]]:
        """The run's partition dir of ``table`` and its Parquet files."""
        if table.startswith("marts/"):
            name = table.split("/", 1)[1]
            return mart_dir(self.warehouse, name, self.run_id), [str(p) for p in mart_files(self.warehouse, name, self.run_id)]
        part = self.warehouse.partition_dir(table, self.run_id)
        return part, _parquet_files(part)

    def rows(self, table: str) -> int | None:
        """The row count of the run's ``table`` from its Parquet footers; None when the run does
        not have the table."""
        part, files = self._files(table)
        if not part.is_dir():
            return None
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)

    def _read(self, table: str) -> DataFrame:
        mart = table.split("/", 1)[1] if table.startswith("marts/") else None
        schema = spark_schema(MARTS[mart] if mart else SCHEMAS[table])
        _, files = self._files(table)
        for f in files if mart else ():
            check_schema(mart, pq.read_schema(f), f)
        if not files:
            return self.spark.createDataFrame([], schema)
        # The files' own schema from their footers (no Spark inference job), then the contract's.
        try:
            reader = self.spark.read.schema(spark_schema(pq.read_schema(files[0])))
        except (TypeError, ValueError, NotImplementedError, pa.ArrowException):
            reader = self.spark.read  # a type Spark must infer itself
        return conform(reader.parquet(*files), schema)
