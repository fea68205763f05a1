"""A view computed once for its checks, each row with its ``_row`` id (its position in the view):
GX evaluates ``frame``, and a failed check's rows are read back by those ids.

A small run's view (``pipelines.spark.session.is_small_run``) is collected to the driver as Arrow
in one Spark query and GX judges it with its pandas engine: no Spark query per metric (GX's
Spark engine made ~50 queries and ~10,000 py4j calls for the demo's ZooKeeper run); its failing
rows come from the Arrow table. A big run's view stays in Spark: checkpointed on the executors,
judged by GX's Spark engine, its failing rows selected by a semi-join on their ids. Both give
the same rows, sorted by their columns (a view's own order follows its plan, and a small run's
exchanges have one partition, a big run's more: ``session.SIZED``), and the same results (the
suites' expectations are written so that both engines read them alike: no Java-only regex
syntax, nulls ignored explicitly where a pair of columns is compared)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame

from pipelines.spark.io import checkpoint_level
from pipelines.spark.session import runtime_setting

ROW_ID = "_row"
AQE = "spark.sql.adaptive.enabled"


def static_plans(spark):
    """Queries on a view planned without adaptive execution, which runs every query with an
    exchange (a view's joins, GX's aggregates and uniqueness windows) as two Spark jobs, the
    exchange's and the result's; on a few thousand rows it has nothing to adapt."""
    return runtime_setting(spark, AQE, "false")


def materialize(views: dict[str, DataFrame], small: bool) -> dict[str, CollectedView | CheckpointedView]:
    """Each of ``views`` computed once, collected (``small``) or checkpointed, side by side
    (:mod:`pipelines.spark.concurrent`: a view is a few short jobs, mostly waiting on one core)."""
    if not views:
        return {}
    from pipelines.spark.concurrent import Concurrent

    kind = CollectedView if small else CheckpointedView
    spark = next(iter(views.values())).sparkSession
    with static_plans(spark), Concurrent(spark) as side:
        chains = {name: side.submit(f"view-{name}", kind.of, frame) for name, frame in views.items()}
    return {name: chain.result() for name, chain in chains.items()}


class CollectedView:
    """The view's rows in the driver: ``table`` (Arrow, with ``_row``), ``frame`` the same rows
    as a pandas frame for GX's pandas engine."""

    def __init__(self, table: pa.Table):
        self.table = table
        self.frame = table.to_pandas()

    @classmethod
    def of(cls, view: DataFrame) -> CollectedView:
        table = view.toArrow()
        return cls(table.append_column(ROW_ID, pa.array(range(table.num_rows), pa.int64())))

    def rows(self, row_ids: list[int] | None) -> pa.Table:
        """The rows with ``row_ids`` (None: every row), without ``_row``, sorted (:func:`by_columns`)."""
        import pyarrow.compute as pc

        rows = self.table
        if row_ids is not None:
            rows = rows.filter(pc.is_in(rows[ROW_ID], value_set=pa.array(row_ids, pa.int64())))
        return by_columns(rows.drop_columns([ROW_ID]))

    def release(self) -> None:
        pass  # nothing cached in Spark


class CheckpointedView:
    """The view's rows checkpointed on the executors with ``_row`` (Spark's monotonically
    increasing id: partition, then position in it)."""

    def __init__(self, frame: DataFrame):
        self.frame = frame

    @classmethod
    def of(cls, view: DataFrame) -> CheckpointedView:
        from pyspark.sql import functions as F

        level = checkpoint_level(view.sparkSession)
        return cls(view.withColumn(ROW_ID, F.monotonically_increasing_id()).localCheckpoint(True, level))

    def rows(self, row_ids: list[int] | None) -> pa.Table:
        rows = self.frame
        if row_ids is not None:
            ids = self.frame.sparkSession.createDataFrame([(i,) for i in row_ids], f"{ROW_ID} long")
            rows = rows.join(ids, ROW_ID, "left_semi")
        return by_columns(rows.drop(ROW_ID).toArrow())

    def release(self) -> None:
        self.frame.unpersist()


def by_columns(rows: pa.Table) -> pa.Table:
    """``rows`` sorted by their columns, first to last, nulls last (columns of nested types take
    no part): an order that follows the rows alone, whatever plan computed them."""
    keys = [(field.name, "ascending") for field in rows.schema if not pa.types.is_nested(field.type)]
    return rows.sort_by(keys) if keys else rows
