"""The two deterministic assignors, as pure DataFrame -> DataFrame functions (no UDF).

Both work on any "group of owners" (ZooKeeper consumer threads or Kafka members):

``members``: ``group_id, owner, member_order`` (one row per owner; ``member_order`` is a
sortable column - a string or a struct - that sorts owners as the assignor does).
``subscriptions``: ``group_id, owner, topic`` (who reads which topic).
``partitions``: ``topic, partition, broker_id, part_order`` (``part_order`` sorts a topic's
partitions, or the whole group's partitions for round-robin, as the assignor does).

Output of both: ``group_id, topic, partition, broker_id, expected_owner``.

**Range** (``kafka.consumer.RangeAssignor`` and the consumer's ``RangeAssignor``), per
(group, topic): owners subscribed to the topic sorted, ``i`` = rank, ``n`` owners, ``P``
partitions sorted, ``per = P div n``, ``extra = P mod n``; owner ``i`` gets
``per * i + min(i, extra)`` .. ``+ per + (i < extra)``. Inverted for partition rank ``j``:
``i = j div (per + 1)`` if ``j < extra * (per + 1)``, else
``extra + (j - extra * (per + 1)) div per``. Range is computed from two small tables, so the
expected owner of any partition is a lookup, not a shuffle over all partitions:
:func:`range_plan` (per group and topic, the sorted owner array) and :func:`range_ranks` (per
partition, its rank ``_j`` and the topic's partition count ``_p``); :func:`range_owner` is the
arithmetic above over their joined columns. :func:`range_assign` joins the plan with the
broadcast ranks; the audit looks observed owners up the same way.

**Round-robin** (``kafka.consumer.RoundRobinAssignor`` 0.9+ and the consumer's
``RoundRobinAssignor``): all owners of the group sorted into a circle, all partitions of
the topics the group subscribes sorted, each partition dealt to the next owner in the
circle (after the previous pick) that subscribes to its topic. When every owner of a group
subscribes to every topic of the group (the usual case) that is ``owner = rank mod n``,
computed with arithmetic; otherwise the deal is a fold (``aggregate``) over the group's
sorted partition array, which carries the circle position.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

OUT = ["group_id", "topic", "partition", "broker_id", "expected_owner"]


def member_order(instance: str, member: str = "member_id") -> Column:
    """``member_order`` of Kafka group members, the order both Kafka range assignors sort them
    in (the consumer's ``AbstractPartitionAssignor.MemberInfo``, the KIP-848 server's
    ``sortMemberIds``): members with a group instance id (column ``instance``) first, by instance
    id, then the others by member id (column ``member``)."""
    return F.struct(
        F.col(instance).isNull().alias("dynamic"),
        F.col(instance).alias("instance"),
        F.col(member).alias("member"),
    ).alias("member_order")


def range_plan(members: DataFrame, subscriptions: DataFrame) -> DataFrame:
    """``group_id, topic, _owners``: the owners subscribed to each topic, in assignor order."""
    entries = subscriptions.join(members, ["group_id", "owner"]).select(
        "group_id", "topic", F.struct("member_order", "owner").alias("_m")
    )
    return entries.groupBy("group_id", "topic").agg(
        F.transform(F.sort_array(F.collect_list("_m")), lambda m: m["owner"]).alias("_owners")
    )


def range_ranks(partitions: DataFrame) -> DataFrame:
    """``topic, partition, broker_id, _j, _p``: each partition's rank in ``part_order`` within
    its topic and the topic's partition count."""
    by_topic = Window.partitionBy("topic")
    return partitions.select(
        "topic",
        "partition",
        "broker_id",
        (F.row_number().over(by_topic.orderBy("part_order")) - 1).alias("_j"),
        F.count(F.lit(1)).over(by_topic).alias("_p"),
    )


def topic_shape(ranks: DataFrame) -> DataFrame:
    """``topic, _p, _dense`` of :func:`range_ranks`: ``_dense`` when the topic's partitions are
    exactly 0..P-1 without a broker (every 0.8+ topic), so that partition ``p`` has rank ``p``."""
    return ranks.groupBy("topic").agg(
        F.max("_p").alias("_p"),
        F.bool_and((F.col("_j") == F.col("partition")) & F.col("broker_id").isNull()).alias("_dense"),
    )


# owner rank of partition rank _j (the module docstring), with n = size(_owners), integer division
_RANGE_RANK = """
    CASE WHEN _j < (_p % size(_owners)) * (_p div size(_owners) + 1)
         THEN _j div (_p div size(_owners) + 1)
         ELSE _p % size(_owners)
              + (_j - (_p % size(_owners)) * (_p div size(_owners) + 1)) div greatest(_p div size(_owners), 1)
    END"""


def range_owner() -> Column:
    """The expected owner of a row carrying ``_owners`` (plan) and ``_j``, ``_p`` (ranks)."""
    return F.get("_owners", F.expr(_RANGE_RANK).cast("int"))


def range_assign(members: DataFrame, subscriptions: DataFrame, partitions: DataFrame) -> DataFrame:
    plan = range_plan(members, subscriptions)
    return plan.join(F.broadcast(range_ranks(partitions)), "topic").select(
        "group_id", "topic", "partition", "broker_id", range_owner().alias("expected_owner")
    )


def roundrobin_assign(members: DataFrame, subscriptions: DataFrame, partitions: DataFrame) -> DataFrame:
    ranked = members.withColumn(
        "_i", F.row_number().over(Window.partitionBy("group_id").orderBy("member_order", "owner")) - 1
    )
    subs = subscriptions.join(ranked.select("group_id", "owner", "_i"), ["group_id", "owner"])
    shape = subs.groupBy("group_id").agg(
        F.countDistinct("owner").alias("_n"),
        F.countDistinct("topic").alias("_t"),
        F.count(F.lit(1)).alias("_pairs"),
    )
    group_topics = subs.select("group_id", "topic").distinct()
    group_parts = group_topics.join(partitions, "topic").join(shape, "group_id")
    uniform = F.col("_pairs") == F.col("_n") * F.col("_t")

    # every owner reads every topic of the group: partition rank mod owners
    simple = group_parts.where(uniform).withColumn(
        "_k", F.row_number().over(Window.partitionBy("group_id").orderBy("part_order")) - 1
    ).withColumn("_i", F.pmod(F.col("_k"), F.col("_n")).cast("int"))
    simple = simple.join(ranked.select("group_id", "_i", "owner"), ["group_id", "_i"]).select(
        "group_id", "topic", "partition", "broker_id", F.col("owner").alias("expected_owner")
    )

    # mixed subscriptions: fold over the sorted partitions, skipping owners not subscribed
    mixed_parts = (
        group_parts.where(~uniform)
        .groupBy("group_id")
        .agg(F.sort_array(F.collect_list(F.struct("part_order", "topic", "partition", "broker_id"))).alias("_parts"))
    )
    sub_map = (
        subs.groupBy("group_id", "topic")
        .agg(F.sort_array(F.collect_list("_i")).alias("_idx"))
        .groupBy("group_id")
        .agg(F.map_from_entries(F.collect_list(F.struct("topic", "_idx"))).alias("_subs"))
    )

    def deal(acc, p):
        idx = F.try_element_at(F.col("_subs"), p["topic"])
        pick = F.coalesce(
            F.try_element_at(F.filter(idx, lambda x: x >= acc["ptr"]), F.lit(1)), F.try_element_at(idx, F.lit(1))
        )
        return F.struct((pick + 1).alias("ptr"), F.concat(acc["picks"], F.array(pick)).alias("picks"))

    start = F.struct(F.lit(0).alias("ptr"), F.array().cast("array<int>").alias("picks"))
    dealt = (
        mixed_parts.join(sub_map, "group_id")
        .select("group_id", "_parts", F.aggregate("_parts", start, deal)["picks"].alias("_picks"))
        .select("group_id", F.explode(F.arrays_zip("_parts", "_picks")).alias("_e"))
    )
    mixed = (
        dealt.select(
            "group_id",
            F.col("_e._parts.topic").alias("topic"),
            F.col("_e._parts.partition").alias("partition"),
            F.col("_e._parts.broker_id").alias("broker_id"),
            F.col("_e._picks").alias("_i"),
        )
        .join(ranked.select("group_id", "_i", "owner"), ["group_id", "_i"])
        .select("group_id", "topic", "partition", "broker_id", F.col("owner").alias("expected_owner"))
    )
    return simple.unionByName(mixed)
