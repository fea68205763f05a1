"""Reading a run's tables into Spark and writing core tables through the warehouse.

Reads (:func:`read_spark`): the run's partition as a DataFrame of its declared schema, the
files checked against it first (:mod:`pipelines.warehouse.reading`); a missing partition (or one without
files) is an empty DataFrame with the table's schema, so a run that has only ZooKeeper input,
or only Kafka logs, still builds.

Writes: Spark writes into the transaction's staging directory (mode overwrite) and the
:class:`~pipelines.warehouse.directory.Transaction` publishes every staged table atomically at the end.
In an Iceberg warehouse each write is instead a commit of the table that the step's ledger row
names at its end (:meth:`~pipelines.warehouse.iceberg.warehouse.IcebergWarehouse.write_spark`):
nothing is staged on the driver's disk, and the staged tables are read back at their snapshots.
The frame is first conformed to the table's declared schema (a ``select`` that is the
output's contract: column order, names and types).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pyarrow.parquet as pq
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pipelines.spark.schemas import empty, table_schema
from pipelines.warehouse.directory import Transaction, Warehouse
from pipelines.warehouse.reading import PARTITION_COLUMN, parquet_files, table_files
from pipelines.warehouse.tables import ADDED_COLUMNS


def read_spark(
    spark: SparkSession, warehouse: Warehouse, table: str, run_id: str, with_run_id: bool = True
) -> DataFrame:
    """The run's ``table`` (raw, core or mart) as a DataFrame of its declared schema (a column a
    file lacks, of ``ADDED_COLUMNS``, is null), plus ``run_id`` unless ``with_run_id`` is False.
    In an Iceberg warehouse: the run's partition of the table at the snapshot the run recorded."""
    if warehouse.format == "iceberg":
        from pipelines.warehouse.iceberg.spark import read_table

        return read_table(spark, warehouse, table, run_id, with_run_id)
    files = table_files(warehouse, table, run_id)
    if not files:
        return empty(spark, table, with_run_id)
    df = spark.read.schema(table_schema(table)).parquet(*[str(f) for f in files])
    return df.withColumn(PARTITION_COLUMN, F.lit(run_id)) if with_run_id else df


def _row_group_stats(path: Path, column: str) -> list[tuple[pq.Statistics | None, int]]:
    """(statistics of ``column``, rows) of every row group of one Parquet file, from its footer."""
    meta = pq.ParquetFile(path).metadata
    index = meta.schema.to_arrow_schema().get_field_index(column)
    return [(meta.row_group(g).column(index).statistics, meta.row_group(g).num_rows)
            for g in range(meta.num_row_groups)]


def row_group_bounds(warehouse: Warehouse, table: str, run_id: str, column: str) -> set:
    """Every row group's min and max of ``column`` in the run's partition, from the Parquet
    statistics (the column's values where a file has none): for a column of at most two
    values per row group (``raw/znodes.source``), its set of values, with no Spark job (in an
    Iceberg warehouse: the column's distinct values, read by pyiceberg)."""
    if warehouse.format == "iceberg":
        values = set(warehouse.read_arrow(table, run_id).column(column).unique().to_pylist())
        values.discard(None)
        return values
    part = warehouse.partition_dir(table, run_id)
    values: set = set()
    for path in parquet_files(part):
        for stats, rows in _row_group_stats(path, column):
            if stats is not None and stats.has_min_max:
                values |= {stats.min, stats.max}
            elif rows:
                values |= set(pq.read_table(path, columns=[column]).column(0).unique().to_pylist())
                break
    values.discard(None)
    return values


def conform(df: DataFrame, table: str, unfilled: Mapping[str, tuple[str, ...]] = ADDED_COLUMNS) -> DataFrame:
    """``df`` as exactly the declared columns of ``table`` (no run_id: the hive dir holds it).
    The columns of ``unfilled[table]`` that ``df`` lacks are null: by default ``ADDED_COLUMNS``
    (the KRaft-only and Kafka-era ones a ZooKeeper builder leaves out), for the Kafka-era states
    ``tables.ZOOKEEPER_STATE_COLUMNS``. Any other declared column ``df`` lacks fails the select
    (Spark's unresolved column error names it)."""
    optional = set(unfilled.get(table, ())) - set(df.columns)
    return df.select(*[(F.lit(None) if f.name in optional else F.col(f.name)).cast(f.dataType).alias(f.name)
                       for f in table_schema(table).fields])


def write_parquet(df: DataFrame, path: Path, mode: str = "overwrite") -> None:
    """Writes ``df`` as the warehouse's Parquet files (zstd) into ``path``."""
    df.write.mode(mode).option("compression", "zstd").parquet(str(path))


def write_staged(tx: Transaction, table: str, df: DataFrame, append: bool = False,
                 unfilled: Mapping[str, tuple[str, ...]] = ADDED_COLUMNS) -> None:
    """Write ``df`` (conformed to ``table``, :func:`conform`'s ``unfilled``) into the
    transaction's staging dir for ``table`` (``append``: next to what an earlier call wrote);
    in an Iceberg warehouse into the table, as a snapshot of the step's."""
    if tx.warehouse.format == "iceberg":
        tx.warehouse.write_spark(tx, table, conform(df, table, unfilled), append)
        return
    write_parquet(conform(df, table, unfilled), tx.staging_dir(table), "append" if append else "overwrite")


def reused(df: DataFrame, eager: bool = False) -> DataFrame:
    """``df`` computed once for all its consumers (two writes, two branches of one plan): a lazy
    local checkpoint. Unlike ``persist`` it needs no ``unpersist`` (its blocks go when the frame
    is collected) and runs no job of its own: its shuffles run when it is defined, its last stage
    inside the first action that reads it, which stores the partitions the later ones read
    (``eager``: in a job of its own, now). Its blocks are kept as :func:`checkpoint_level` says."""
    return df.localCheckpoint(eager=eager, storageLevel=checkpoint_level(df.sparkSession))


def checkpoint_level(spark: SparkSession) -> StorageLevel | None:
    """How a local checkpoint keeps its blocks. A local checkpoint has no lineage to recompute
    a lost block from: an action that needs a block of an executor that is gone fails ("Checkpoint
    block ... not found"), and retrying its tasks cannot help. On a cluster each block is
    therefore stored on two executors (``MEMORY_AND_DISK_2``): losing one executor (a crash, a
    preempted or decommissioned node) loses no block. In local mode the driver is the executor:
    Spark's default, one copy (None)."""
    master = spark.sparkContext.master or ""
    return None if master.startswith("local") else StorageLevel.MEMORY_AND_DISK_2


def observe(df: DataFrame, **metrics: Column) -> tuple[DataFrame, Observation]:
    """``df`` computing the aggregate ``metrics`` while an action (a write) runs over it, and
    the ``Observation`` whose ``.get`` holds them afterwards: counts without a second pass."""
    observation = Observation()
    return df.observe(observation, *[m.alias(name) for name, m in metrics.items()]), observation


def read_staged(spark: SparkSession, tx: Transaction, table: str) -> DataFrame:
    """A table staged earlier in the same transaction, read back (cheaper than recomputing)."""
    if tx.warehouse.format == "iceberg":
        from pipelines.warehouse.iceberg.spark import read_table

        return read_table(spark, tx.warehouse, table, tx.run_id, with_run_id=False, snapshot_id=tx.written[table][0])
    return spark.read.schema(table_schema(table)).parquet(str(tx.staging_dir(table)))


def staged_rows(tx: Transaction, table: str) -> int:
    """Row count of a staged table, from the Parquet footers (no Spark job); in an Iceberg
    warehouse the rows the step's commits of it added."""
    if tx.warehouse.format == "iceberg":
        return tx.written.get(table, (None, 0))[1]
    return sum(pq.ParquetFile(f).metadata.num_rows for f in parquet_files(tx.staging_dir(table)))


def staged_non_null(tx: Transaction, table: str, column: str) -> int:
    """Non-null values of ``column`` in a staged table, from the row groups' null counts in
    the Parquet footers (the column itself is read only where a row group has none); in an
    Iceberg warehouse from the manifests' counts at the step's snapshot of it."""
    if tx.warehouse.format == "iceberg":
        written = tx.written.get(table)
        return 0 if written is None else tx.warehouse.non_null_at(table, written[0], tx.run_id, column)
    values = 0
    for path in parquet_files(tx.staging_dir(table)):
        groups = _row_group_stats(path, column)
        if all(stats is not None and stats.has_null_count for stats, _ in groups):
            values += sum(rows - stats.null_count for stats, rows in groups)
        else:
            values += pq.read_table(path, columns=[column]).column(0).drop_null().length()
    return values
