"""Reading a run's tables into Spark and writing core tables through the warehouse.

Reads (:func:`read_spark`): the run's partition of the table at the snapshot the run recorded,
as a DataFrame of its declared schema; a table the run does not have is an empty DataFrame with
the table's schema, so a run that has only ZooKeeper input, or only Kafka logs, still builds.

Writes (:func:`write_staged`): each write is a commit of the table on the step's branch that
the step's ledger row names at its end (:meth:`~pipelines.warehouse.warehouse.Warehouse.write_spark`):
the executors write the data files to the tables' location, nothing is staged on the driver's
disk, and a table written earlier in the step is read back at its snapshot (:func:`read_staged`).
The frame is first conformed to the table's declared schema (a ``select`` that is the output's
contract: column order, names and types).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pipelines.spark.schemas import empty, table_schema
from pipelines.warehouse.tables import ADDED_COLUMNS
from pipelines.warehouse.warehouse import Warehouse
from pipelines.warehouse.writer import Transaction


def read_spark(
    spark: SparkSession, warehouse: Warehouse, table: str, run_id: str, with_run_id: bool = True
) -> DataFrame:
    """The run's ``table`` (raw, core or mart) as a DataFrame of its declared schema (a column a
    table lacks, of ``ADDED_COLUMNS``, is null), plus ``run_id`` unless ``with_run_id`` is False:
    the run's partition of the table at the snapshot the run recorded."""
    from pipelines.warehouse.iceberg.spark import read_table

    return read_table(spark, warehouse, table, run_id, with_run_id)


def row_group_bounds(warehouse: Warehouse, table: str, run_id: str, column: str) -> set:
    """The distinct non-null values of ``column`` in the run's partition of ``table`` (so every
    row group's bounds among them), read by pyiceberg with no Spark job: for a column of few
    values (``raw/znodes.source``) or its largest value (``raw/znode_changes.zxid``)."""
    values = set(warehouse.read_arrow(table, run_id, columns=[column]).column(column).unique().to_pylist())
    values.discard(None)
    return values


def conform(df: DataFrame, table: str, unfilled: Mapping[str, tuple[str, ...]] = ADDED_COLUMNS) -> DataFrame:
    """``df`` as exactly the declared columns of ``table`` (no run_id: the write adds the partition's).
    The columns of ``unfilled[table]`` that ``df`` lacks are null: by default ``ADDED_COLUMNS``
    (the KRaft-only and Kafka-era ones a ZooKeeper builder leaves out), for the Kafka-era states
    ``tables.ZOOKEEPER_STATE_COLUMNS``. Any other declared column ``df`` lacks fails the select
    (Spark's unresolved column error names it)."""
    optional = set(unfilled.get(table, ())) - set(df.columns)
    return df.select(*[(F.lit(None) if f.name in optional else F.col(f.name)).cast(f.dataType).alias(f.name)
                       for f in table_schema(table).fields])


def write_staged(tx: Transaction, table: str, df: DataFrame, append: bool = False,
                 unfilled: Mapping[str, tuple[str, ...]] = ADDED_COLUMNS) -> None:
    """Write ``df`` (conformed to ``table``, :func:`conform`'s ``unfilled``) into the table as a
    snapshot of the step's (``append``: added to what an earlier call of the step wrote)."""
    df = conform(df, table, unfilled)
    tx.warehouse.write_spark(tx, table, df, append, empty=known_empty(df))


def known_empty(df: DataFrame) -> bool:
    """``df`` has no rows by its plan alone: built over an empty table of the run (an empty local
    relation, :func:`~pipelines.spark.schemas.empty`) that Spark's optimizer folds the whole plan
    into. No job runs; a plan without such a leaf is not optimized here."""
    execution = df._jdf.queryExecution()
    leaves = execution.analyzed().collectLeaves()
    if not any(_empty_relation(leaves.apply(i)) for i in range(leaves.size())):
        return False
    return _empty_relation(execution.optimizedPlan())


def _empty_relation(plan) -> bool:
    return plan.getClass().getSimpleName() == "LocalRelation" and plan.data().isEmpty()


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
    """A table written earlier in the same step, read back at the step's snapshot of it (cheaper
    than recomputing)."""
    from pipelines.warehouse.iceberg.spark import read_table

    sid = tx.written[table][0]
    if sid is None:  # the step wrote no rows (``Warehouse._nothing_written``)
        return empty(spark, table)
    return read_table(spark, tx.warehouse, table, tx.run_id, with_run_id=False, snapshot_id=sid)


def staged_rows(tx: Transaction, table: str) -> int:
    """Rows the step's writes of ``table`` added (from the commits' summaries: no Spark job)."""
    return tx.written.get(table, (None, 0))[1]


def staged_non_null(tx: Transaction, table: str, column: str) -> int:
    """Non-null values of ``column`` in a table the step wrote, from the manifests' counts at the
    step's snapshot of it."""
    sid = tx.written.get(table, (None,))[0]
    return 0 if sid is None else tx.warehouse.non_null_at(table, sid, tx.run_id, column)
