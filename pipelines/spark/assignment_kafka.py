"""Kafka (classic protocol) consumer groups from ``__consumer_offsets``: the latest
GroupMetadata record of each group, its members, their observed assignment and the
expected one.

Latest record: the rule of ``pipelines.warehouse.tables.GROUP_RECORD_ORDER`` (log order). A tombstone, an
Empty group (no members) or a non-``consumer`` protocol type as the latest record means no
ownership rows for that group.

Expected owners (owner names are member ids):

- ``range``: per topic, members with a ``group.instance.id`` first (by instance id), then
  the others by member id; range arithmetic (``RangeAssignor``; the 3.5+ rack-aware variant
  only applies when members and replicas declare racks, which these tables do not carry).
- ``roundrobin``: members in the same order, partitions sorted by (topic, partition), dealt
  in a circle skipping members not subscribed (``RoundRobinAssignor``).
- any other protocol (``sticky``, ``cooperative-sticky``, custom): the expected owner depends
  on the previous assignment or on code we do not have, so ``expected_owner`` is null and
  ``assignor`` says ``"<protocol>: not recomputed"``; the audit then applies only the
  structural checks (duplicate_owner, unexpected_partition, unknown_owner, and unowned when
  some member subscribes to the topic and nobody owns the partition; otherwise ok).

Partitions of a topic: ZooKeeper's 0.8+ topic metadata when it has the topic, else the
partitions found in ``raw/log_end_offsets``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.spark.assignors import member_order, range_assign, roundrobin_assign
from pipelines.warehouse.tables import GROUP_RECORD_ORDER

SOURCE = "kafka"
RECOMPUTED = ("range", "roundrobin")
KEY = ["group_id", "offsets_partition", "log_offset"]


def latest(records: DataFrame, *key: str) -> DataFrame:
    """The latest record of each ``key`` (all rows of that record; ``GROUP_RECORD_ORDER``),
    tombstones dropped (a null ``is_tombstone`` is a live record): the one rule of the classic
    (``raw/group_metadata``) and the KIP-848 (``raw/consumer_group_*``) group records."""
    w = Window.partitionBy(*key)
    order = F.struct(*GROUP_RECORD_ORDER)
    live = ~F.coalesce(F.col("is_tombstone"), F.lit(False))
    return records.withColumn("_last", F.max(order).over(w)).where((order == F.col("_last")) & live).drop("_last")


def latest_groups(group_metadata: DataFrame) -> DataFrame:
    """``group_id, offsets_partition, log_offset, protocol``: live consumer groups, latest record each."""
    return latest(group_metadata, "group_id").where(F.col("protocol_type") == "consumer").select(*KEY, "protocol")


def latest_members(latest: DataFrame, group_members: DataFrame) -> DataFrame:
    """``group_id, owner, member_order, protocol`` of the latest record's members."""
    return group_members.join(latest, KEY).select(
        "group_id",
        F.col("member_id").alias("owner"),
        member_order("group_instance_id"),
        "protocol",
        "subscribed_topics",
    )


def observed_owners(latest: DataFrame, group_assignments: DataFrame) -> DataFrame:
    """``source, group_id, topic, partition, broker_id, owner`` from the latest record."""
    return group_assignments.join(latest, KEY).select(
        F.lit(SOURCE).alias("source"),
        "group_id",
        "topic",
        "partition",
        F.lit(None).cast("int").alias("broker_id"),
        F.col("member_id").alias("owner"),
    )


def topic_partitions(zk_topic_partitions: DataFrame, log_end_offsets: DataFrame) -> DataFrame:
    """``topic, partition, broker_id`` for Kafka groups: ZooKeeper 0.8+ metadata, else log ends."""
    zk = zk_topic_partitions.where(F.col("broker_id").isNull()).select("topic", "partition").distinct()
    from_logs = (
        log_end_offsets.select("topic", "partition").distinct()
        .join(zk.select("topic").distinct(), "topic", "left_anti")
    )
    return zk.unionByName(from_logs).select("topic", "partition", F.lit(None).cast("int").alias("broker_id"))


def expected_assignment(members: DataFrame, partitions: DataFrame) -> DataFrame:
    """``core/expected_assignment`` rows of Kafka groups (see the module docstring)."""
    subs = members.select("group_id", "owner", "protocol", F.explode("subscribed_topics").alias("topic")).distinct()
    mem = members.select("group_id", "owner", "member_order", "protocol")

    def of(name: str, frame: DataFrame) -> DataFrame:
        return frame.where(F.col("protocol") == name).drop("protocol")

    ranged = range_assign(
        of("range", mem), of("range", subs), partitions.withColumn("part_order", F.col("partition"))
    ).withColumn("assignor", F.lit("range"))
    rr = roundrobin_assign(
        of("roundrobin", mem),
        of("roundrobin", subs),
        partitions.withColumn("part_order", F.struct("topic", "partition")),
    ).withColumn("assignor", F.lit("roundrobin"))
    others = (
        subs.where(~F.coalesce(F.col("protocol").isin(*RECOMPUTED), F.lit(False)))
        .select("group_id", "topic", "protocol")
        .distinct()
        .join(partitions, "topic")
        .select(
            "group_id",
            "topic",
            "partition",
            "broker_id",
            F.lit(None).cast("string").alias("expected_owner"),
            F.concat(F.coalesce(F.col("protocol"), F.lit("unknown")), F.lit(": not recomputed")).alias("assignor"),
        )
    )
    return ranged.unionByName(rr).unionByName(others).select(
        F.lit(SOURCE).alias("source"), "group_id", "topic", "partition", "broker_id", "expected_owner", "assignor"
    )
