"""KIP-848 consumer groups (the server-side protocol of Kafka 3.7+/4.x) from the raw tables of
their ``__consumer_offsets`` records: their state, expected and observed owners for
``core/assignment_audit`` (``source = 'kafka'``), and the named findings of
``core/consumer_group_findings``.

State: the latest record of each key (group; group and member), by ``log_offset`` (ties
across offsets partitions go to the higher one, as for classic groups); a tombstone as the
latest record deletes the key, and a group whose ConsumerGroupMetadata is deleted has no
state. Topic ids name topics through the KRaft registry (``core/topic_partitions.topic_id``),
else through the group's latest ConsumerGroupPartitionMetadata; an id neither knows keeps its
id as the topic name and is the finding ``unresolved_topic_id``.

Owners (member ids): expected = the server's target assignment
(ConsumerGroupTargetAssignmentMember); observed = what each member holds: its current
assignment (ConsumerGroupCurrentMemberAssignment) plus the partitions pending revocation,
which it still owns until it acknowledges the revocation.

Findings (``finding`` column, the names of ``tables.CONSUMER_GROUP_FINDINGS``), each from the
rules of Apache Kafka's group coordinator (``group-coordinator/src/main/java/org/apache/kafka/
coordinator/group/``):

- ``range_target_differs``: a group whose members all name the server assignor ``range``: the
  target recomputed with ``assignor/RangeAssignor.java`` (Kafka 3.9+, KAFKA-16944: not sticky)
  differs. Its rule: members sorted with those that have an instance id first, by instance id,
  then by member id (``sortMemberIds``); per topic, the P partitions go in contiguous ranges to
  the M subscribed members in that order, the first ``P % M`` getting ``P / M + 1``
  (``addPartitionsToAssignment``). Homogeneous groups walk every topic for every member in the
  same order, so topics with equal partition counts are co-partitioned; heterogeneous groups
  count the subscribers of each topic: the same arithmetic (``pipelines.spark.assignors``).
  Kafka 3.7/3.8 shipped a sticky variant: its targets are findings here.
- ``uniform_partition_untargeted`` / ``uniform_partition_targeted_twice`` /
  ``uniform_target_not_subscribed`` / ``uniform_unbalanced``: groups on ``uniform`` (the
  server default, ``assignor/UniformAssignor.java``) depend on the previous target, so their
  properties are checked: every partition of a subscribed topic targeted exactly once, only
  to a subscriber, and for homogeneous subscriptions target sizes within one.
- ``epoch_order_violated``: group epoch >= assignment epoch >= every member epoch
  (``modern/consumer/ConsumerGroup.java``, ``CurrentAssignmentBuilder.java``).
- ``partition_held_twice``: a partition held by two members outside a hand-off; in a hand-off
  the previous owner holds it pending revocation while the next waits in
  ``UNRELEASED_PARTITIONS`` (``modern/MemberState.java``) without holding it.
- ``stable_member_off_target``: a ``STABLE`` member whose holding differs from its target.

Every function is DataFrame -> DataFrame (no UDF).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.spark.assignment_kafka import latest
from pipelines.spark.assignors import member_order, range_assign
from pipelines.spark.io import reused

SOURCE = "kafka"
RAW_TABLES = (
    "raw/consumer_group_metadata",
    "raw/consumer_group_partition_metadata",
    "raw/consumer_group_members",
    "raw/consumer_group_target_metadata",
    "raw/consumer_group_target_assignments",
    "raw/consumer_group_current_assignments",
    "raw/consumer_group_regexes",
)
FINDING_COLUMNS = ["source", "group_id", "member_id", "topic", "partition", "finding", "detail"]


def live_groups(group_metadata: DataFrame) -> DataFrame:
    """``group_id, group_epoch`` of the groups whose latest ConsumerGroupMetadata is not deleted."""
    return latest(group_metadata, "group_id").select("group_id", "group_epoch")


def _of_live(df: DataFrame, groups: DataFrame) -> DataFrame:
    return df.join(groups.select("group_id"), "group_id", "left_semi")


def current_members(group_metadata: DataFrame, members: DataFrame) -> DataFrame:
    """``group_id, member_id`` of the members of live groups whose latest member record is not
    deleted: the group's registered members."""
    return _of_live(latest(members, "group_id", "member_id"), live_groups(group_metadata)).select(
        "group_id", "member_id"
    )


def topic_names(topic_partitions: DataFrame, partition_metadata: DataFrame) -> DataFrame:
    """``group_id, topic_id, topic, num_partitions``: the registry's names for every group's
    ids (``group_id`` null: any group), then each group's own partition metadata."""
    registry = (
        topic_partitions.where(F.col("topic_id").isNotNull())
        .groupBy("topic_id", "topic")
        .agg(F.count(F.lit(1)).cast("int").alias("num_partitions"))
        .select(F.lit(None).cast("string").alias("group_id"), "topic_id", "topic", "num_partitions")
    )
    own = (
        latest(partition_metadata, "group_id")
        .where(F.col("topic_id").isNotNull())
        .join(registry.select("topic_id"), "topic_id", "left_anti")
        .select("group_id", "topic_id", "topic", "num_partitions")
    )
    return registry.unionByName(own)


def _explode(df: DataFrame, column: str) -> DataFrame:
    """``group_id, member_id, topic_id, partition`` of a list<struct<topic_id, partitions>> column."""
    return df.select("group_id", "member_id", F.explode(column).alias("_t")).select(
        "group_id", "member_id", F.col("_t.topic_id").alias("topic_id"), F.explode("_t.partitions").alias("partition")
    )


def named(df: DataFrame, names: DataFrame) -> DataFrame:
    """``df`` with ``topic`` (its id when unresolved) and ``_resolved``."""
    anywhere = names.where(F.col("group_id").isNull()).select("topic_id", F.col("topic").alias("_reg"))
    own = names.where(F.col("group_id").isNotNull()).select("group_id", "topic_id", F.col("topic").alias("_own"))
    return (
        df.join(F.broadcast(anywhere), "topic_id", "left")
        .join(own, ["group_id", "topic_id"], "left")
        .withColumn("_resolved", F.coalesce("_reg", "_own").isNotNull())
        .withColumn("topic", F.coalesce("_reg", "_own", "topic_id"))
        .drop("_reg", "_own")
    )


def state(raw: dict[str, DataFrame], topic_partitions: DataFrame) -> dict[str, DataFrame]:
    """The groups' latest state: ``groups`` (group_id, group_epoch, assignment_epoch, assignor),
    ``members``, ``target`` and ``held`` (group_id, member_id, topic_id, topic, partition,
    _resolved; ``held`` also ``pending``), ``current`` (group_id, member_id, state,
    member_epoch: every member's current assignment record, also of members holding nothing),
    ``names`` (topic_names), ``partitions`` (group_id, topic, partition of the topics the
    group's members subscribe to). Each is computed once (:func:`~pipelines.spark.io.reused`):
    the expected rows, the audit, the findings and the epochs' audit all read them."""
    groups = reused(live_groups(raw["raw/consumer_group_metadata"]))
    members = reused(_of_live(latest(raw["raw/consumer_group_members"], "group_id", "member_id"), groups))
    target_meta = latest(raw["raw/consumer_group_target_metadata"], "group_id").select("group_id", "assignment_epoch")
    names = reused(topic_names(topic_partitions, _of_live(raw["raw/consumer_group_partition_metadata"], groups)))
    target = named(
        _explode(
            _of_live(latest(raw["raw/consumer_group_target_assignments"], "group_id", "member_id"), groups),
            "topic_partitions",
        ),
        names,
    )
    current = reused(_of_live(latest(raw["raw/consumer_group_current_assignments"], "group_id", "member_id"), groups))
    current_state = current.select("group_id", "member_id", "state", "member_epoch")
    held = named(
        _explode(current, "assigned_partitions")
        .withColumn("pending", F.lit(False))
        .unionByName(_explode(current, "partitions_pending_revocation").withColumn("pending", F.lit(True))),
        names,
    ).join(current_state, ["group_id", "member_id"])
    regex_topics = latest(raw["raw/consumer_group_regexes"], "group_id", "regular_expression").select(
        "group_id", F.col("regular_expression").alias("subscribed_topic_regex"), "topics"
    )
    subscribed = (
        members.select("group_id", "member_id", F.explode("subscribed_topics").alias("topic"))
        .unionByName(
            members.join(regex_topics, ["group_id", "subscribed_topic_regex"]).select(
                "group_id", "member_id", F.explode("topics").alias("topic")
            )
        )
        .distinct()
    )
    assignor = members.groupBy("group_id").agg(
        F.when(F.count_distinct(F.coalesce("server_assignor", F.lit(""))) == 1, F.max("server_assignor")).alias(
            "assignor"
        ),
        F.max(F.col("server_assignor").isNull().cast("int")).alias("_default"),
    )
    groups = (
        groups.join(target_meta, "group_id", "left")
        .join(assignor, "group_id", "left")
        .select(
            "group_id",
            "group_epoch",
            "assignment_epoch",
            F.when(F.col("_default") == 1, F.lit("uniform")).otherwise(F.col("assignor")).alias("assignor"),
        )
    )
    known = names.select("group_id", "topic", "num_partitions")
    by_name = (
        known.where(F.col("group_id").isNull())
        .drop("group_id")
        .unionByName(known.where(F.col("group_id").isNotNull()).drop("group_id"))
        .groupBy("topic")
        .agg(F.max("num_partitions").alias("num_partitions"))
    )
    partitions = (
        subscribed.select("group_id", "topic")
        .distinct()
        .join(by_name, "topic")
        .select("group_id", "topic", F.explode(F.sequence(F.lit(0), F.col("num_partitions") - 1)).alias("partition"))
    )
    return dict(
        groups=groups,
        members=members,
        subscribed=reused(subscribed),
        target=reused(target),
        held=reused(held),
        current=current_state,
        names=names,
        partitions=reused(partitions),
        topics=reused(by_name),
    )


def expected_assignment(st: dict[str, DataFrame]) -> DataFrame:
    """``core/expected_assignment`` rows: the server's target."""
    return (
        st["target"]
        .join(st["groups"].select("group_id", "assignor"), "group_id")
        .select(
            F.lit(SOURCE).alias("source"),
            "group_id",
            "topic",
            "partition",
            F.lit(None).cast("int").alias("broker_id"),
            F.col("member_id").alias("expected_owner"),
            F.concat(F.coalesce("assignor", F.lit("unknown")), F.lit(": server target")).alias("assignor"),
        )
    )


def audit_inputs(st: dict[str, DataFrame]) -> dict[str, DataFrame]:
    """The inputs of :func:`pipelines.spark.audit.audit` besides ``expected``."""
    src = F.lit(SOURCE).alias("source")
    return {
        "observed": st["held"].select(
            src,
            "group_id",
            "topic",
            "partition",
            F.lit(None).cast("int").alias("broker_id"),
            F.col("member_id").alias("owner"),
        ),
        "registered": st["members"].select(src, "group_id", F.col("member_id").alias("owner")),
        "subscribed": st["subscribed"].select(src, "group_id", "topic"),
        "known": st["topics"].select(
            src,
            "topic",
            F.explode(F.sequence(F.lit(0), F.col("num_partitions") - 1)).alias("partition"),
            F.lit(None).cast("int").alias("broker_id"),
        ),
    }


def _finding(
    df: DataFrame,
    name: str,
    detail: Column,
    member: Column | None = None,
    topic: Column | None = None,
    partition: Column | None = None,
) -> DataFrame:
    return df.select(
        F.lit(SOURCE).alias("source"),
        "group_id",
        (member if member is not None else F.lit(None)).cast("string").alias("member_id"),
        (topic if topic is not None else F.lit(None)).cast("string").alias("topic"),
        (partition if partition is not None else F.lit(None)).cast("int").alias("partition"),
        F.lit(name).alias("finding"),
        detail.cast("string").alias("detail"),
    )


def range_recompute(st: dict[str, DataFrame]) -> DataFrame:
    """``group_id, topic, partition, broker_id, expected_owner``: RangeAssignor's target of the
    groups on ``range`` (see the module docstring)."""
    ranged = st["groups"].where(F.col("assignor") == "range").select("group_id")
    members = (
        st["members"]
        .join(ranged, "group_id", "left_semi")
        .select(
            "group_id",
            F.col("member_id").alias("owner"),
            member_order("instance_id"),
        )
    )
    subs = (
        st["subscribed"]
        .join(ranged, "group_id", "left_semi")
        .join(st["topics"].select("topic"), "topic")
        .select("group_id", F.col("member_id").alias("owner"), "topic")
    )
    parts = st["topics"].select(
        "topic", F.explode(F.sequence(F.lit(0), F.col("num_partitions") - 1)).alias("partition")
    )
    parts = parts.select(
        "topic", "partition", F.lit(None).cast("int").alias("broker_id"), F.col("partition").alias("part_order")
    )
    return range_assign(members, subs, parts)


def findings(st: dict[str, DataFrame]) -> DataFrame:
    """``core/consumer_group_findings`` rows (see the module docstring)."""
    groups, target, held = st["groups"], st["target"], st["held"]
    out = []

    # range: recomputed vs the server's target
    ranged = groups.where(F.col("assignor") == "range").select("group_id")
    recomputed = range_recompute(st).select("group_id", "topic", "partition", F.col("expected_owner").alias("_want"))
    server = target.join(ranged, "group_id", "left_semi").select(
        "group_id", "topic", "partition", F.col("member_id").alias("_got")
    )
    diff = recomputed.join(server, ["group_id", "topic", "partition"], "full_outer").where(
        ~F.col("_want").eqNullSafe(F.col("_got"))
    )
    out.append(
        _finding(
            diff,
            "range_target_differs",
            F.concat(
                F.lit("range assigns "),
                F.coalesce("_want", F.lit("nobody")),
                F.lit(", target has "),
                F.coalesce("_got", F.lit("nobody")),
            ),
            member=F.col("_got"),
            topic=F.col("topic"),
            partition=F.col("partition"),
        )
    )

    # uniform: properties
    uniform = groups.where(F.col("assignor") == "uniform").select("group_id")
    ut = target.join(uniform, "group_id", "left_semi")
    counted = ut.groupBy("group_id", "topic", "partition").agg(
        F.count(F.lit(1)).alias("_n"), F.sort_array(F.collect_list("member_id")).alias("_to")
    )
    wanted = st["partitions"].join(uniform, "group_id", "left_semi")
    untargeted = wanted.join(counted, ["group_id", "topic", "partition"], "left_anti")
    out.append(
        _finding(
            untargeted,
            "uniform_partition_untargeted",
            F.lit("a subscribed partition nobody is targeted"),
            topic=F.col("topic"),
            partition=F.col("partition"),
        )
    )
    out.append(
        _finding(
            counted.where(F.col("_n") > 1),
            "uniform_partition_targeted_twice",
            F.concat(F.lit("targeted to "), F.array_join("_to", ", ")),
            topic=F.col("topic"),
            partition=F.col("partition"),
        )
    )
    not_sub = ut.join(st["subscribed"], ["group_id", "member_id", "topic"], "left_anti")
    out.append(
        _finding(
            not_sub,
            "uniform_target_not_subscribed",
            F.lit("targeted to a member that does not subscribe"),
            member=F.col("member_id"),
            topic=F.col("topic"),
            partition=F.col("partition"),
        )
    )
    subs_sets = (
        st["subscribed"]
        .join(uniform, "group_id", "left_semi")
        .groupBy("group_id", "member_id")
        .agg(F.sort_array(F.collect_set("topic")).alias("_topics"))
    )
    members_u = st["members"].join(uniform, "group_id", "left_semi").select("group_id", "member_id")
    sizes = members_u.join(
        ut.groupBy("group_id", "member_id").agg(F.count(F.lit(1)).alias("_size")), ["group_id", "member_id"], "left"
    ).join(subs_sets, ["group_id", "member_id"], "left")
    homogeneous = sizes.groupBy("group_id").agg(
        F.count_distinct(F.coalesce(F.array_join("_topics", "\u0000"), F.lit(""))).alias("_sets"),
        F.max(F.coalesce("_size", F.lit(0))).alias("_max"),
        F.min(F.coalesce("_size", F.lit(0))).alias("_min"),
    )
    out.append(
        _finding(
            homogeneous.where((F.col("_sets") == 1) & (F.col("_max") - F.col("_min") > 1)),
            "uniform_unbalanced",
            F.concat(F.lit("target sizes from "), F.col("_min"), F.lit(" to "), F.col("_max")),
        )
    )

    # epochs: group >= assignment >= member (every member with a current assignment, holding or not)
    epochs = st["current"].select("group_id", "member_id", "member_epoch").join(groups, "group_id")
    bad_group = groups.where(F.col("assignment_epoch") > F.col("group_epoch"))
    out.append(
        _finding(
            bad_group,
            "epoch_order_violated",
            F.concat(
                F.lit("assignment epoch "), F.col("assignment_epoch"), F.lit(" > group epoch "), F.col("group_epoch")
            ),
        )
    )
    bad_member = epochs.where(F.col("member_epoch") > F.coalesce("assignment_epoch", "group_epoch"))
    out.append(
        _finding(
            bad_member,
            "epoch_order_violated",
            F.concat(
                F.lit("member epoch "),
                F.col("member_epoch"),
                F.lit(" > assignment epoch "),
                F.coalesce(F.col("assignment_epoch").cast("string"), F.lit("(none)")),
            ),
            member=F.col("member_id"),
        )
    )

    # a partition held by two members outside a hand-off
    holders = (
        held.groupBy("group_id", "topic", "partition")
        .agg(
            F.count_distinct("member_id").alias("_n"),
            F.sort_array(F.collect_list(F.struct("member_id", "pending", "state"))).alias("_h"),
        )
        .where(F.col("_n") > 1)
    )
    hand_off = (F.size(F.filter("_h", lambda h: ~h["pending"])) <= 1) & F.exists(
        "_h", lambda h: h["state"] == "UNRELEASED_PARTITIONS"
    )
    out.append(
        _finding(
            holders.where(~hand_off),
            "partition_held_twice",
            F.concat(F.lit("held by "), F.array_join(F.transform("_h", lambda h: h["member_id"]), ", ")),
            topic=F.col("topic"),
            partition=F.col("partition"),
        )
    )

    # STABLE members whose holding differs from their target (a STABLE member holding nothing too)
    mine = held.where(F.col("state") == "STABLE").select("group_id", "member_id", "topic", "partition")
    stable = st["current"].where(F.col("state") == "STABLE").select("group_id", "member_id")
    theirs = target.join(stable, ["group_id", "member_id"], "left_semi").select(
        "group_id", "member_id", "topic", "partition"
    )
    off = (
        mine.join(theirs, ["group_id", "member_id", "topic", "partition"], "left_anti")
        .withColumn("_d", F.lit("held, not targeted"))
        .unionByName(
            theirs.join(mine, ["group_id", "member_id", "topic", "partition"], "left_anti").withColumn(
                "_d", F.lit("targeted, not held")
            )
        )
    )
    out.append(
        _finding(
            off,
            "stable_member_off_target",
            F.col("_d"),
            member=F.col("member_id"),
            topic=F.col("topic"),
            partition=F.col("partition"),
        )
    )

    # topic ids nobody names
    unresolved = target.select("group_id", "topic_id", "_resolved").unionByName(
        held.select("group_id", "topic_id", "_resolved")
    )
    out.append(
        _finding(
            unresolved.where(~F.col("_resolved")).select("group_id", "topic_id").distinct(),
            "unresolved_topic_id",
            F.concat(
                F.lit("topic id "),
                F.col("topic_id"),
                F.lit(" is in neither the KRaft registry nor the group's partition metadata"),
            ),
            topic=F.col("topic_id"),
        )
    )
    result = out[0]
    for frame in out[1:]:
        result = result.unionByName(frame)
    return result.select(*FINDING_COLUMNS)
