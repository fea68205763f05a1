"""Share groups (KIP-932), every assignment epoch audited: ``core/share_group_epochs`` from the
share group records of ``__consumer_offsets`` (``raw/group_coordinator_records``, key types
10-15, fields as JSON; ``pipelines.spark.share_records.JSON_SCHEMAS``).

One row per ShareGroupTargetAssignmentMetadata record (each epoch the coordinator computed a
target for, not only the latest), in log order of its group's ``__consumer_offsets`` partition.
What the coordinator knew at that record is the latest record of each key before it (Apache
Kafka ``group-coordinator/.../GroupMetadataManager.java`` writes the members, the group epoch,
each changed member's target and then the target's epoch; a tombstone deletes a key):

- the target: each member's latest ShareGroupTargetAssignmentMember (members whose target was
  deleted left out), its partitions (``topic_id, partition``);
- the subscriptions: each targeted member's latest ShareGroupMemberMetadata;
- the assignable partitions: the partitions of the subscribed topics in the group's latest
  ShareGroupStatePartitionMetadata ``initializedTopics``. The coordinator assigns a partition
  only once its share-group state is initialized (a real 4.2 broker's first epoch targets
  nothing while the topic is in ``initializingTopics``), so those still initializing are
  counted apart and are no fault. With no such record before the epoch the assignable
  partitions are unknown (null).

Audited per epoch: partitions of subscribed topics targeted to no member
(``partitions_unassigned``); partitions targeted to more than one member
(``partitions_shared``: share groups share a partition among members by design when there are
more members than partitions); and, where the simple assignor's rule is deterministic (every
targeted member subscribes to the same topics: ``SimpleHomogeneousAssignmentBuilder.java``), the
partitions targeted to more members than ``ceil(M / P)`` (``partitions_over_shared``; null for
mixed subscriptions).

Settled (``pipelines.spark.group_epochs``): every targeted member reached the epoch - a
ShareGroupCurrentMemberAssignment at ``memberEpoch`` = the epoch, state stable
(``modern/MemberState.java``: 0) - after the epoch's target and before the next epoch's. An
epoch that never settled and was superseded is a transition (``is_transition``), not a fault;
the last epoch, still reconciling at the end of the records, has ``is_transition`` null.

Every function is DataFrame -> DataFrame (no UDF).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.spark import group_epochs
from pipelines.spark.share_records import share_records

STABLE = 0  # MemberState of ShareGroupCurrentMemberAssignment: 0 stable
EPOCH = ("group_id", "assignment_epoch", "pos")


def _typed(records: DataFrame, record_type: str) -> DataFrame:
    return share_records(records, record_type).withColumn("pos", F.struct("offsets_partition", "log_offset"))


def _not_deleted() -> F.Column:
    return ~F.coalesce(F.col("is_tombstone"), F.lit(False))


def _as_of(meta: DataFrame, frame: DataFrame, *key: str) -> DataFrame:
    """Per epoch of ``meta``, the latest record of each ``key`` of ``frame`` before its target's
    epoch record, kept when it is no tombstone."""
    joined = (meta.select(*EPOCH).join(frame.select("group_id", *key, F.col("pos").alias("_at"), "is_tombstone", "v"),
                                       "group_id")
              .where(F.col("_at") < F.col("pos")))
    last = F.max("_at").over(Window.partitionBy(*EPOCH, *key))
    return joined.withColumn("_last", last).where((F.col("_at") == F.col("_last")) & _not_deleted()).drop("_last")


def _topics(frame: DataFrame, column: str) -> DataFrame:
    t = frame.select(*EPOCH, F.explode(F.col(f"v.{column}")).alias("t"))
    return t.select(*EPOCH, F.col("t.topicId").alias("topic_id"), F.col("t.topicName").alias("topic"),
                    F.explode("t.partitions").alias("partition"))


def epochs(records: DataFrame) -> DataFrame:
    """``core/share_group_epochs`` from the share group records (``raw/group_coordinator_records``)."""
    key = list(EPOCH)
    meta = (_typed(records, "ShareGroupTargetAssignmentMetadata").where(_not_deleted())
            .select("group_id", F.col("v.assignmentEpoch").alias("assignment_epoch"), "pos",
                    F.col("batch_timestamp").alias("target_at"))
            .withColumn("next_pos", F.lead("pos").over(Window.partitionBy("group_id").orderBy("pos"))))
    target = _as_of(meta, _typed(records, "ShareGroupTargetAssignmentMember"), "member_id")
    members = group_epochs.members(target, list(key))
    held = (target.select(*key, "member_id", F.explode("v.topicPartitions").alias("t"))
            .select(*key, "member_id", F.col("t.topicId").alias("topic_id"),
                    F.explode("t.partitions").alias("partition")))
    per_partition = held.groupBy(*key, "topic_id", "partition").agg(F.countDistinct("member_id").alias("n"))

    subs = (_as_of(meta, _typed(records, "ShareGroupMemberMetadata"), "member_id")
            .join(target.select(*key, "member_id"), [*key, "member_id"], "left_semi")
            .select(*key, "member_id", F.array_sort(F.coalesce("v.subscribedTopicNames",
                                                               F.array().cast("array<string>"))).alias("subs")))
    homogeneous = subs.groupBy(*key).agg((F.countDistinct("subs") == 1).alias("homogeneous"))
    subscribed = subs.select(*key, F.explode("subs").alias("topic")).distinct()
    state_meta = _as_of(meta, _typed(records, "ShareGroupStatePartitionMetadata"))
    known = state_meta.select(*key)
    assignable = _topics(state_meta, "initializedTopics").join(subscribed, [*key, "topic"], "left_semi")
    initializing = _topics(state_meta, "initializingTopics").join(subscribed, [*key, "topic"], "left_semi")
    unassigned = assignable.join(per_partition, [*key, "topic_id", "partition"], "left_anti")
    counts = (known.join(assignable.groupBy(*key).agg(F.count(F.lit(1)).alias("partitions_assignable")), key, "left")
              .join(initializing.groupBy(*key).agg(F.count(F.lit(1)).alias("partitions_initializing")), key, "left")
              .join(unassigned.groupBy(*key).agg(F.count(F.lit(1)).alias("partitions_unassigned")), key, "left")
              .fillna(0, ["partitions_assignable", "partitions_initializing", "partitions_unassigned"]))
    targeted = per_partition.groupBy(*key).agg(
        F.count(F.lit(1)).alias("partitions_targeted"),
        F.sum(F.when(F.col("n") > 1, 1).otherwise(0)).alias("partitions_shared"),
        F.collect_list("n").alias("_n"))

    current = _typed(records, "ShareGroupCurrentMemberAssignment").where(_not_deleted()).select(
        "group_id", "member_id", F.col("pos").alias("current_pos"), F.col("batch_timestamp").alias("current_at"),
        F.col("v.memberEpoch").alias("member_epoch"), F.col("v.state").alias("state"))
    reached = group_epochs.reached(meta, current, target, key, STABLE)

    out = (meta.join(members, key, "left").join(targeted, key, "left").join(counts, key, "left")
           .join(homogeneous, key, "left").join(reached, key, "left")
           .fillna(0, ["members", "members_settled", "partitions_targeted", "partitions_shared"]))
    # the simple assignor's bound on the members sharing a partition: D = ceil(M / P)
    bound = F.expr("cast((members + partitions_assignable - 1) div partitions_assignable as int)")
    over = F.when(F.coalesce(F.col("homogeneous"), F.lit(True)) & (F.col("partitions_assignable") > 0),
                  F.size(F.filter(F.coalesce("_n", F.array().cast("array<bigint>")), lambda n: n > bound)))
    return out.select(
        "group_id", "assignment_epoch", F.col("pos.offsets_partition").alias("offsets_partition"),
        F.col("pos.log_offset").alias("log_offset"), "target_at", *group_epochs.settlement(),
        F.col("partitions_targeted").cast("int").alias("partitions_targeted"),
        F.col("partitions_assignable").cast("int").alias("partitions_assignable"),
        F.col("partitions_initializing").cast("int").alias("partitions_initializing"),
        F.col("partitions_unassigned").cast("int").alias("partitions_unassigned"),
        F.col("partitions_shared").cast("int").alias("partitions_shared"),
        over.cast("int").alias("partitions_over_shared"))
