"""The registry tables from a KRaft metadata replay (``raw/kraft_*``, written by ``kaudit
extract kraft``) when the run has no ZooKeeper registry: ``core/brokers``,
``core/topic_partitions`` (plus ``topic_id``, ``directories``, ``eligible_leader_replicas``)
and ``core/cluster`` in the shapes the ZooKeeper parsers give them, so that everything
downstream works on KRaft clusters unchanged. KRaft deletes a topic at once: no pending
deletions."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.context import RunContext
from pipelines.spark.io import read_spark
from pipelines.warehouse.reading import row_count


def used(ctx: RunContext) -> bool:
    """The run has a KRaft registry and no ZooKeeper znodes."""
    wh, run_id = ctx.warehouse, ctx.run_id
    return not row_count(wh, "raw/znodes", run_id) and bool(row_count(wh, "raw/kraft_cluster", run_id))


def frames(spark: SparkSession, ctx: RunContext) -> dict[str, DataFrame]:
    """The three core registry tables of the run's KRaft replay."""
    def raw(table: str) -> DataFrame:
        return read_spark(spark, ctx.warehouse, table, ctx.run_id)

    return {
        "core/brokers": raw("raw/kraft_brokers").select("broker_id", "host", "port", "endpoints", "rack", "fenced"),
        "core/topic_partitions": raw("raw/kraft_partitions").where(F.col("topic").isNotNull()).select(
            "topic", "partition", F.lit(None).cast("int").alias("broker_id"), "replicas", "leader", "leader_epoch",
            "isr", "topic_id", "directories", "eligible_leader_replicas",
        ),
        "core/cluster": raw("raw/kraft_cluster").select(
            "cluster_id", "controller_id", F.array().cast("array<string>").alias("pending_topic_deletions")
        ),
    }
