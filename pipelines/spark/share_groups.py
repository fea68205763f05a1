"""Share groups (KIP-932): the state of every share-partition replayed from
``raw/share_partition_states`` (``__share_group_state``), the members' assignments from the
share group records of ``__consumer_offsets`` (``raw/group_coordinator_records``, key types
10-15, fields as JSON), and their audit: ``core/share_partition_state``,
``core/share_group_assignments``, ``core/share_group_findings``.

Replay (Apache Kafka ``share-coordinator/.../ShareCoordinatorShard.java`` and
``PersisterStateBatchCombiner.java``): a share-partition's state is its latest ShareSnapshot
with the ShareUpdates after it, in log order of its ``__share_group_state`` partition. The
start offset is the latest one set (an update's -1 leaves it, a snapshot's -1 is a partition
never started); an offset's delivery state and count are those of the latest record whose
batches cover it; offsets below the start are no longer tracked. A tombstone as the latest
record deletes the state. A share-partition with records but no replayable snapshot (the
coordinator pruned it), or a value after its snapshot that did not decode or holds a batch
that cannot be expanded (``MAX_BATCH_OFFSETS``), has unknown state:
``state_known`` false, no counts, and the finding ``share_state_unknown``.

Offsets are expanded one row per offset of each batch (``sequence``): batches cover the
in-flight records of a share-partition only, which the broker bounds
(``group.share.partition.max.record.locks``, 2000 by default), so the rows are at most that many
per record.

Lag, as the broker answers it in ``listShareGroupOffsets`` (KIP-1226): the records from the
start offset to the log end whose delivery has not completed, ``log_end - start -
(acknowledged + archived at or above the start)``; null when the log end or the start is
unknown. Archived records are the ones the application never processed: released or rejected
until the broker gave up (delivery count at ``group.share.delivery.count.limit``), or rejected.

Findings (``finding``): ``archived_unacknowledged`` (per share-partition: how many offsets and
which, with their delivery counts), ``partition_unassigned`` (a partition of a topic some member
subscribes to that no member's current assignment holds), ``member_epoch_ahead`` (a member's
epoch above the group's assignment epoch), ``share_state_unknown``, ``simple_assignor_mismatch``.

The simple assignor (Apache Kafka ``group-coordinator/.../assignor/SimpleAssignor.java``,
``SimpleHomogeneousAssignmentBuilder.java``) is sticky: which member gets which partition
depends on the previous assignment, so only its balance is checked, where it is deterministic -
a homogeneous group (every live member subscribes to the same topics, ``M`` members, ``P``
partitions of those topics) that has settled (every member's epoch equal to the assignment
epoch and the group epoch: a group still reconciling is a transition, not a fault, as for
KIP-848 groups). There each partition is shared by at most ``D = ceil(M / P)`` members, and
each member holds ``floor(D * P / M)`` or ``ceil(D * P / M)`` partitions (the builder's
desired counts). A partition shared by more, or a member holding another count, is a
``simple_assignor_mismatch``.

Every function is DataFrame -> DataFrame (no UDF).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.spark.share_records import share_records

ACKNOWLEDGED, ARCHIVED = 2, 4
# the widest state batch expanded offset by offset; a wider one makes the state unknown (a broker
# tracks at most group.share.partition.max.record.locks in-flight records per share-partition)
MAX_BATCH_OFFSETS = 1 << 20
KEY = ("group_id", "topic_id", "partition")



def _latest(records: DataFrame, *key: str) -> DataFrame:
    """The latest record of each key by (offsets partition, log offset); tombstones dropped."""
    w = Window.partitionBy(*key)
    order = F.struct("offsets_partition", "log_offset")
    return (records.withColumn("_last", F.max(order).over(w))
            .where((order == F.col("_last")) & ~F.coalesce(F.col("is_tombstone"), F.lit(False))).drop("_last"))


def topic_names(coordinator_records: DataFrame, known: DataFrame | None = None) -> DataFrame:
    """``topic_id, topic``: from the share groups' state partition metadata (every list), and
    ``known`` (``topic_id, topic``, e.g. the KRaft registry's) where given."""
    meta = share_records(coordinator_records, "ShareGroupStatePartitionMetadata")
    ids = meta.select(F.explode(F.concat(F.coalesce("v.initializingTopics", F.array()),
                                         F.coalesce("v.initializedTopics", F.array()),
                                         F.coalesce("v.deletingTopics", F.array()))).alias("t")).select(
        F.col("t.topicId").alias("topic_id"), F.col("t.topicName").alias("topic"))
    if known is not None:
        ids = ids.unionByName(known.select("topic_id", "topic"))
    return ids.where(F.col("topic_id").isNotNull() & F.col("topic").isNotNull()).dropDuplicates(["topic_id"])


def replay(states: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(partitions, offsets): per share-partition (``KEY``) its replay's summary - ``state_known``,
    ``snapshot_log_offset``, ``start_offset``, ``state_epoch``, ``leader_epoch``,
    ``delivery_complete_count`` (the latest record's, -1: not written), ``records`` - and per
    tracked offset at or above the start its ``delivery_state``, ``delivery_count``."""
    keyed = states.withColumn("_order", F.struct("state_partition", "log_offset"))
    w = Window.partitionBy(*KEY)
    snap = F.when((F.col("record_type") == "ShareSnapshot") & F.col("is_replayable") & ~F.col("is_tombstone")
                  & F.col("state_batches").isNotNull(), F.col("_order"))
    keyed = (keyed.withColumn("_snap", F.max(snap).over(w))
             .withColumn("_last", F.max("_order").over(w)))
    since = keyed.where(F.col("_snap").isNotNull() & (F.col("_order") >= F.col("_snap")))
    # a batch that ends before it starts or spans more offsets than a broker tracks: not expanded
    unusable = F.exists(F.coalesce("state_batches", F.array()), lambda b: (b["last_offset"] < b["first_offset"])
                        | (b["last_offset"] - b["first_offset"] >= MAX_BATCH_OFFSETS))
    undecoded = (~F.col("is_tombstone") & F.col("state_batches").isNull()) | unusable
    summary = keyed.groupBy(*KEY).agg(
        F.count(F.lit(1)).alias("records"),
        F.max("_snap").alias("_snap"),
        F.max(F.when(F.col("_order") == F.col("_last"), F.col("is_tombstone"))).alias("deleted"),
    )
    after = since.groupBy(*KEY).agg(
        F.max(F.when(undecoded, F.lit(True))).alias("_undecoded"),
        F.max_by("start_offset", F.when(F.col("start_offset") >= 0, F.col("_order"))).alias("start_offset"),
        F.max_by("state_epoch", F.when(F.col("state_epoch").isNotNull(), F.col("_order"))).alias("state_epoch"),
        F.max_by("leader_epoch", F.col("_order")).alias("leader_epoch"),
        F.max_by("delivery_complete_count", F.col("_order")).alias("delivery_complete_count"),
    )
    parts = (summary.join(after, list(KEY), "left")
             .withColumn("state_known", F.col("_snap").isNotNull() & ~F.coalesce("_undecoded", F.lit(False))
                         & ~F.coalesce("deleted", F.lit(False)))
             .withColumn("snapshot_log_offset", F.col("_snap.log_offset"))
             .drop("_snap", "_undecoded"))
    batches = (since.join(parts.where("state_known").select(*KEY), list(KEY))
               .where(F.col("state_batches").isNotNull())
               .select(*KEY, "_order", F.explode("state_batches").alias("b"))
               .select(*KEY, "_order", F.explode(F.sequence("b.first_offset", "b.last_offset")).alias("offset"),
                       F.col("b.delivery_state").alias("delivery_state"),
                       F.col("b.delivery_count").alias("delivery_count")))
    wo = Window.partitionBy(*KEY, "offset")
    offsets = (batches.withColumn("_newest", F.max("_order").over(wo)).where(F.col("_order") == F.col("_newest"))
               .join(parts.where("state_known").select(*KEY, "start_offset"), list(KEY))
               .where(F.col("start_offset").isNull() | (F.col("offset") >= F.col("start_offset")))
               .select(*KEY, "offset", "delivery_state", "delivery_count"))
    return parts, offsets


def partition_state(states: DataFrame, names: DataFrame, log_end: DataFrame) -> DataFrame:
    """``core/share_partition_state``: one row per share-partition, with lag and archived offsets."""
    parts, offsets = replay(states)
    counts = offsets.groupBy(*KEY).agg(
        F.sum((F.col("delivery_state") == ACKNOWLEDGED).cast("long")).alias("acknowledged"),
        F.sum((F.col("delivery_state") == ARCHIVED).cast("long")).alias("archived"),
        F.sum((~F.col("delivery_state").isin(ACKNOWLEDGED, ARCHIVED)).cast("long")).alias("in_flight"),
        F.sort_array(F.collect_list(F.when(F.col("delivery_state") == ARCHIVED, F.col("offset"))))
        .alias("archived_offsets"),
        F.max(F.when(F.col("delivery_state") == ARCHIVED, F.col("delivery_count")))
        .alias("archived_max_delivery_count"),
    )
    ends = log_end.select("topic", "partition", "log_end_offset")
    out = (parts.join(counts, list(KEY), "left").join(names, "topic_id", "left")
           .join(ends, ["topic", "partition"], "left"))
    known = F.col("state_known")
    for c in ("acknowledged", "archived", "in_flight"):
        out = out.withColumn(c, F.when(known, F.coalesce(F.col(c), F.lit(0))))
    done = F.col("acknowledged") + F.col("archived")
    return out.select(
        *KEY, "topic", "state_known", "records", "snapshot_log_offset", "start_offset", "state_epoch",
        "leader_epoch", "delivery_complete_count", "acknowledged", "archived", "in_flight",
        F.when(known, F.coalesce("archived_offsets", F.array().cast("array<bigint>"))).alias("archived_offsets"),
        "archived_max_delivery_count", "log_end_offset",
        F.when(known, F.col("log_end_offset") - F.col("start_offset") - done).alias("lag"),
    )


def assignments(coordinator_records: DataFrame, names: DataFrame) -> DataFrame:
    """``core/share_group_assignments``: per live member of each share group and each
    partition of its current assignment (one row with null topic when it holds none): the
    member's client, subscription and epoch, and the group's epochs."""
    def live(record_type, *key):
        return _latest(share_records(coordinator_records, record_type), *key)

    members = live("ShareGroupMemberMetadata", "group_id", "member_id").select(
        "group_id", "member_id", F.col("v.clientId").alias("client_id"), F.col("v.clientHost").alias("client_host"),
        F.col("v.subscribedTopicNames").alias("subscribed_topics"))
    current = live("ShareGroupCurrentMemberAssignment", "group_id", "member_id").select(
        "group_id", "member_id", F.col("v.memberEpoch").alias("member_epoch"),
        F.explode_outer("v.assignedPartitions").alias("t"))
    current = current.select("group_id", "member_id", "member_epoch", F.col("t.topicId").alias("topic_id"),
                             F.explode_outer("t.partitions").alias("partition"))
    group = live("ShareGroupMetadata", "group_id").select("group_id", F.col("v.epoch").alias("group_epoch"))
    target = live("ShareGroupTargetAssignmentMetadata", "group_id").select(
        "group_id", F.col("v.assignmentEpoch").alias("assignment_epoch"))
    return (members.join(current, ["group_id", "member_id"], "left").join(names, "topic_id", "left")
            .join(group, "group_id", "left").join(target, "group_id", "left")
            .select("group_id", "member_id", "client_id", "client_host", "subscribed_topics", "member_epoch",
                    "group_epoch", "assignment_epoch", "topic_id", "topic", "partition"))


def findings(state: DataFrame, assigned: DataFrame, topic_partitions: DataFrame) -> DataFrame:
    """``core/share_group_findings`` from the two tables above and ``topic, partition`` of the
    cluster's topics."""
    archived = state.where(F.col("archived") > 0).select(
        *KEY, "topic", F.lit(None).cast("string").alias("member_id"),
        F.lit("archived_unacknowledged").alias("finding"),
        F.concat(F.col("archived").cast("string"), F.lit(" offsets archived unacknowledged ("),
                 F.array_join(F.slice(F.col("archived_offsets"), 1, 20), ", "),
                 F.when(F.size("archived_offsets") > 20, F.lit(", ...")).otherwise(F.lit("")),
                 F.lit("; delivery count up to "), F.col("archived_max_delivery_count").cast("string"),
                 F.lit(")")).alias("detail"))
    unknown = state.where(~F.col("state_known")).select(
        *KEY, "topic", F.lit(None).cast("string").alias("member_id"), F.lit("share_state_unknown").alias("finding"),
        F.concat(F.col("records").cast("string"),
                 F.lit(" records, no ShareSnapshot to replay from (pruned) or a value after it not decoded"))
        .alias("detail"))
    subscribed = (assigned.select("group_id", F.explode("subscribed_topics").alias("topic")).distinct()
                  .join(topic_partitions.select("topic", "partition"), "topic"))
    held = assigned.where(F.col("partition").isNotNull()).select("group_id", "topic", "partition").distinct()
    unassigned = subscribed.join(held, ["group_id", "topic", "partition"], "left_anti").select(
        "group_id", F.lit(None).cast("string").alias("topic_id"), "partition", "topic",
        F.lit(None).cast("string").alias("member_id"), F.lit("partition_unassigned").alias("finding"),
        F.lit("a partition of a subscribed topic that no member's current assignment holds").alias("detail"))
    ahead = (assigned.where(F.col("member_epoch") > F.col("assignment_epoch"))
             .select("group_id", "member_id", "member_epoch", "assignment_epoch").distinct().select(
        "group_id", F.lit(None).cast("string").alias("topic_id"), F.lit(None).cast("int").alias("partition"),
        F.lit(None).cast("string").alias("topic"), "member_id", F.lit("member_epoch_ahead").alias("finding"),
        F.concat(F.lit("member epoch "), F.col("member_epoch").cast("string"), F.lit(" > assignment epoch "),
                 F.col("assignment_epoch").cast("string")).alias("detail")))
    return (archived.unionByName(unknown).unionByName(unassigned).unionByName(ahead)
            .unionByName(simple_assignor(assigned, topic_partitions)))


def simple_assignor(assigned: DataFrame, topic_partitions: DataFrame) -> DataFrame:
    """``simple_assignor_mismatch`` findings of the settled homogeneous share groups of
    ``assigned`` (``core/share_group_assignments``) over ``topic, partition`` of the cluster."""
    members = assigned.select("group_id", "member_id", "member_epoch", "assignment_epoch", "group_epoch",
                              F.array_sort(F.coalesce("subscribed_topics", F.array().cast("array<string>")))
                              .alias("subs")).distinct()
    groups = members.groupBy("group_id").agg(
        F.countDistinct("member_id").alias("m"), F.countDistinct("subs").alias("_subscriptions"),
        F.first("subs").alias("subs"),
        F.min(F.coalesce(F.col("member_epoch") == F.col("assignment_epoch"), F.lit(False))).alias("_at_target"),
        F.min(F.coalesce(F.col("assignment_epoch") == F.col("group_epoch"), F.lit(False))).alias("_current"))
    parts = (groups.select("group_id", F.explode("subs").alias("topic"))
             .join(topic_partitions.select("topic", "partition").distinct(), "topic")
             .groupBy("group_id").agg(F.count(F.lit(1)).alias("p")))
    settled = (groups.where((F.col("_subscriptions") == 1) & F.col("_at_target") & F.col("_current"))
               .join(parts, "group_id").where(F.col("p") > 0)
               .withColumn("d", F.expr("cast((m + p - 1) div p as int)"))
               .withColumn("lo", F.expr("cast(floor(d * p / m) as int)"))
               .withColumn("hi", F.expr("cast(ceil(d * p / m) as int)"))
               .select("group_id", "m", "p", "d", "lo", "hi"))
    held = assigned.where(F.col("partition").isNotNull()).join(settled, "group_id")
    shared = (held.groupBy("group_id", "topic_id", "topic", "partition", "d")
              .agg(F.countDistinct("member_id").alias("n")).where(F.col("n") > F.col("d")).select(
        "group_id", "topic_id", "partition", "topic", F.lit(None).cast("string").alias("member_id"),
        F.lit("simple_assignor_mismatch").alias("finding"),
        F.concat(F.lit("held by "), F.col("n").cast("string"), F.lit(" members; the simple assignor shares a "
                                                                      "partition among at most "),
                 F.col("d").cast("string")).alias("detail")))
    counts = (assigned.join(settled, "group_id")
              .groupBy("group_id", "member_id", "lo", "hi", "m", "p")
              .agg(F.count("partition").alias("n")).where((F.col("n") < F.col("lo")) | (F.col("n") > F.col("hi")))
              .select("group_id", F.lit(None).cast("string").alias("topic_id"),
                      F.lit(None).cast("int").alias("partition"), F.lit(None).cast("string").alias("topic"),
                      "member_id", F.lit("simple_assignor_mismatch").alias("finding"),
                      F.concat(F.lit("holds "), F.col("n").cast("string"),
                               F.lit(" partitions; the simple assignor gives each of "), F.col("m").cast("string"),
                               F.lit(" members "), F.col("lo").cast("string"),
                               F.when(F.col("hi") != F.col("lo"), F.concat(F.lit(" or "), F.col("hi").cast("string")))
                               .otherwise(F.lit("")),
                               F.lit(" of "), F.col("p").cast("string")).alias("detail")))
    return shared.unionByName(counts)


def core_frames(spark, ctx, topic_parts: DataFrame) -> dict[str, DataFrame]:
    """The four ``core/share_*`` tables of ``ctx.run_id`` (empty when it has no share group):
    ``topic_parts`` is ``core/topic_partitions`` (its topic ids name topics; with the log ends,
    its partitions are the ones a subscription covers)."""
    from pipelines.spark import share_epochs
    from pipelines.spark.io import read_spark

    def raw(table):
        return read_spark(spark, ctx.warehouse, table, ctx.run_id, with_run_id=False)

    coordinator = raw("raw/group_coordinator_records").where(F.col("key_type").between(10, 15))
    log_end = raw("raw/log_end_offsets")
    names = topic_names(coordinator, topic_parts.where(F.col("topic_id").isNotNull()))
    state = partition_state(raw("raw/share_partition_states"), names, log_end)
    assigned = assignments(coordinator, names)
    parts = topic_parts.select("topic", "partition").unionByName(log_end.select("topic", "partition")).distinct()
    return {
        "core/share_partition_state": state,
        "core/share_group_assignments": assigned,
        "core/share_group_findings": findings(state, assigned, parts),
        "core/share_group_epochs": share_epochs.epochs(coordinator),
    }
