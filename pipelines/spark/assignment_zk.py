"""Expected owners of ZooKeeper-era consumer groups (``kafka.consumer.PartitionAssignor``,
0.7 - 1.x), from ``core/consumer_registrations`` and ``core/topic_partitions``.

Threads: ``<consumer_id>-<n>`` for n in 0..streams-1 per subscribed topic, sorted as strings
(``c-10`` < ``c-2``, like ``ConsumerThreadId``'s ordering by ``toString``).

Partition order: 0.8+ partitions numerically; 0.7 partitions are the strings
``<broker_id>-<partition_id>`` and 0.7's ``ZkUtils.getPartitionsForTopics`` sorts them as
strings (``partList.sortWith((s, t) => s < t)``), which clusters them by broker (note: as
strings, so ``1-10`` < ``1-2`` and ``10-0`` < ``2-0``; the upstream source wins over
FORMATS.md's "by broker, then partition").

Assignor per group: ``range`` (the default) or ``roundrobin`` (``--assignor GROUP=roundrobin``).
Round-robin sorts partitions by the Java ``hashCode`` of ``"[topic,partition]"`` (signed
int32; ties, which the JVM leaves in hash-map order, are broken by topic and partition) and
deals them over all threads of the group sorted as strings, skipping threads not subscribed
to the partition's topic (0.9+ behaviour; 0.8.2 refused mixed subscriptions outright).
Owner names are thread ids, as written to ``/consumers/<g>/owners/<t>/<p>``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.errors import UsageError
from pipelines.spark.assignors import range_assign, roundrobin_assign
from pipelines.spark.javahash import topic_partition_hash

SOURCE = "zookeeper"
DEFAULT_ASSIGNOR = "range"
ASSIGNORS = ("range", "roundrobin")


def consumer_threads(registrations: DataFrame) -> DataFrame:
    """``group_id, consumer_id, topic, owner`` (thread id) for every stream of every registration."""
    streams = registrations.where(F.col("streams") > 0).select(
        "group_id", "consumer_id", "topic", F.explode(F.sequence(F.lit(0), F.col("streams") - 1)).alias("_n")
    )
    return streams.select(
        "group_id", "consumer_id", "topic", F.concat(F.col("consumer_id"), F.lit("-"), F.col("_n").cast("string")).alias("owner")
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


def assignor_table(groups: DataFrame, assignors: dict[str, str]) -> DataFrame:
    """``group_id, assignor`` for every group of ``groups`` (default range)."""
    spark = groups.sparkSession
    configured = spark.createDataFrame(sorted(assignors.items()), "group_id string, configured string")
    return (
        groups.select("group_id")
        .distinct()
        .join(F.broadcast(configured), "group_id", "left")
        .select("group_id", F.coalesce("configured", F.lit(DEFAULT_ASSIGNOR)).alias("assignor"))
    )


def expected_assignment(registrations: DataFrame, topic_partitions: DataFrame, assignors: dict[str, str]) -> DataFrame:
    """``core/expected_assignment`` rows of ZooKeeper groups."""
    unknown = sorted(set(assignors.values()) - set(ASSIGNORS))
    if unknown:
        raise UsageError(f"unknown ZooKeeper assignor(s) {', '.join(unknown)}: use {'|'.join(ASSIGNORS)}")
    threads = consumer_threads(registrations)
    chosen = assignor_table(threads, assignors)
    threads = threads.join(chosen, "group_id")
    parts = topic_partitions.select("topic", "partition", "broker_id")
    members = threads.select("group_id", "owner", "assignor").distinct().withColumn("member_order", F.col("owner"))
    subs = threads.select("group_id", "owner", "topic", "assignor").distinct()

    def of(name: str, frame: DataFrame) -> DataFrame:
        return frame.where(F.col("assignor") == name).drop("assignor")

    ranged = range_assign(of("range", members), of("range", subs), range_order(parts)).withColumn(
        "assignor", F.lit("range")
    )
    rr = roundrobin_assign(of("roundrobin", members), of("roundrobin", subs), roundrobin_order(parts)).withColumn(
        "assignor", F.lit("roundrobin")
    )
    return ranged.unionByName(rr).select(
        F.lit(SOURCE).alias("source"), "group_id", "topic", "partition", "broker_id", "expected_owner", "assignor"
    )
