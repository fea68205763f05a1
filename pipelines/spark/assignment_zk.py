"""Expected owners of ZooKeeper-era consumer groups (``kafka.consumer.PartitionAssignor``,
0.7 - 1.x), from ``core/consumer_registrations`` and ``core/topic_partitions``.

Threads: ``<consumer_id>-<n>`` for n in 0..streams-1 per subscribed topic, sorted as strings
(``c-10`` < ``c-2``, like ``ConsumerThreadId``'s ordering by ``toString``).

Partition order: 0.8+ partitions numerically; 0.7 partitions are the strings
``<broker_id>-<partition_id>`` and 0.7's ``ZkUtils.getPartitionsForTopics`` sorts them as
strings (``partList.sortWith((s, t) => s < t)``), which clusters them by broker (note: as
strings, so ``1-10`` < ``1-2`` and ``10-0`` < ``2-0``; the upstream source wins over
docs/formats.md's "by broker, then partition").

Assignor per group: ``range`` (the default) or ``roundrobin`` (``--assignor GROUP=roundrobin``).
Round-robin sorts partitions by the Java ``hashCode`` of ``"[topic,partition]"`` (signed
int32; ties, which the JVM leaves in hash-map order, are broken by topic and partition) and
deals them over all threads of the group sorted as strings, skipping threads not subscribed
to the partition's topic (0.9+ behaviour; 0.8.2 refused mixed subscriptions outright).
Owner names are thread ids, as written to ``/consumers/<g>/owners/<t>/<p>``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.errors import UsageError
from pipelines.spark.assignors import (
    range_owner,
    range_ranks,
    roundrobin_assign,
    topic_shape,
)
from pipelines.spark.javahash import topic_partition_hash
from pipelines.warehouse.tables import ZOOKEEPER_ASSIGNORS as ASSIGNORS

SOURCE = "zookeeper"


def consumer_threads(registrations: DataFrame) -> DataFrame:
    """``group_id, consumer_id, topic, owner`` (thread id) for every stream of every registration."""
    streams = registrations.where(F.col("streams") > 0).select(
        "group_id", "consumer_id", "topic", F.explode(F.sequence(F.lit(0), F.col("streams") - 1)).alias("_n")
    )
    return streams.select(
        "group_id",
        "consumer_id",
        "topic",
        F.concat(F.col("consumer_id"), F.lit("-"), F.col("_n").cast("string")).alias("owner"),
    )


def partition_name(partition: str = "partition", broker_id: str = "broker_id"):
    """The znode name of a partition: ``p`` (0.8+) or ``<broker_id>-<p>`` (0.7)."""
    return F.when(F.col(broker_id).isNull(), F.col(partition).cast("string")).otherwise(
        F.concat(F.col(broker_id).cast("string"), F.lit("-"), F.col(partition).cast("string"))
    )


def range_order(partitions: DataFrame) -> DataFrame:
    """``part_order`` for range: numeric for 0.8+, the 0.7 name as a string otherwise."""
    return partitions.withColumn(
        "part_order",
        F.struct(
            F.when(F.col("broker_id").isNull(), F.col("partition")).alias("num"),
            F.when(F.col("broker_id").isNotNull(), partition_name()).alias("name"),
        ),
    )


def roundrobin_order(partitions: DataFrame) -> DataFrame:
    """``part_order`` for round-robin: hashCode of ``"[topic,partition]"``, then topic, partition."""
    return partitions.withColumn(
        "part_order",
        F.struct(
            topic_partition_hash(F.col("topic"), partition_name()).alias("hash"),
            F.col("topic"),
            F.col("broker_id"),
            F.col("partition"),
        ),
    )


def check_assignors(assignors: dict[str, str]) -> None:
    unknown = sorted(set(assignors.values()) - set(ASSIGNORS))
    if unknown:
        raise UsageError(f"unknown ZooKeeper assignor(s) {', '.join(unknown)}: use {'|'.join(ASSIGNORS)}")


def non_range_groups(assignors: dict[str, str]) -> list[str]:
    """The groups configured for another assignor than range (the default)."""
    return sorted(g for g, a in assignors.items() if a != "range")


def is_range_group(assignors: dict[str, str], group_id: str = "group_id") -> Column:
    """True for the groups the range assignor applies to."""
    others = non_range_groups(assignors)
    return ~F.col(group_id).isin(*others) if others else F.lit(True)


def _members(threads: DataFrame) -> DataFrame:
    return threads.select("group_id", "owner").distinct().withColumn("member_order", F.col("owner"))


def range_inputs(threads: DataFrame, topic_partitions: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The range plan (per group and topic) and the sparse ranks of range groups' ``threads``.

    Threads sort by their own names, so the plan is :func:`~pipelines.spark.assignors.range_plan`
    without its member join: each (group, topic)'s thread ids, sorted. Each plan row also
    carries its topic's shape (:func:`~pipelines.spark.assignors.topic_shape`): ``_p`` and
    ``_dense``. A dense topic (every 0.8+ topic: partitions 0..P-1) needs no rank lookup, the
    rank is the partition; the ranks returned are those of the other topics only."""
    plan = threads.groupBy("group_id", "topic").agg(F.sort_array(F.collect_list("owner")).alias("_owners"))
    ranks = range_ranks(range_order(topic_partitions.select("topic", "partition", "broker_id")))
    shape = topic_shape(ranks)
    sparse = ranks.join(shape.where(~F.col("_dense")).select("topic"), "topic", "left_semi")
    return plan.join(shape, "topic", "left"), sparse.select("topic", "partition", "broker_id", "_j")


def expected_range(plan: DataFrame, sparse: DataFrame) -> DataFrame:
    """``core/expected_assignment`` rows of range groups from :func:`range_inputs`: a dense
    topic's partitions are generated from its count, a sparse topic's joined from its ranks."""
    dense = plan.where(F.col("_dense")).select(
        "group_id",
        "topic",
        "_owners",
        "_p",
        F.explode(F.sequence(F.lit(0), F.col("_p").cast("int") - 1)).alias("partition"),
    ).select("*", F.lit(None).cast("int").alias("broker_id"), F.col("partition").alias("_j"))
    other = plan.where(~F.col("_dense")).join(F.broadcast(sparse), "topic")
    return dense.unionByName(other.select(*dense.columns)).select(
        F.lit(SOURCE).alias("source"), "group_id", "topic", "partition", "broker_id",
        range_owner().alias("expected_owner"), F.lit("range").alias("assignor"),
    )


def expected_roundrobin(threads: DataFrame, topic_partitions: DataFrame) -> DataFrame:
    """``core/expected_assignment`` rows of round-robin groups' ``threads``."""
    subs = threads.select("group_id", "owner", "topic").distinct()
    parts = roundrobin_order(topic_partitions.select("topic", "partition", "broker_id"))
    return roundrobin_assign(_members(threads), subs, parts).select(
        F.lit(SOURCE).alias("source"), "group_id", "topic", "partition", "broker_id", "expected_owner",
        F.lit("roundrobin").alias("assignor"),
    )


def expected_assignment(registrations: DataFrame, topic_partitions: DataFrame, assignors: dict[str, str]) -> DataFrame:
    """``core/expected_assignment`` rows of ZooKeeper groups."""
    check_assignors(assignors)
    threads = consumer_threads(registrations)
    ranged = is_range_group(assignors)
    plan, ranks = range_inputs(threads.where(ranged), topic_partitions)
    return expected_range(plan, ranks).unionByName(expected_roundrobin(threads.where(~ranged), topic_partitions))
