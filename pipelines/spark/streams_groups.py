"""Streams groups (KIP-1071): their topology and every member's tasks from the streams group
records of ``__consumer_offsets`` (``raw/group_coordinator_records``, key types 17-23, fields
as JSON with Kafka 4.2's names), and their audit: ``core/streams_group_topology``,
``core/streams_group_tasks``, ``core/streams_group_findings`` and the history of every
assignment epoch, ``core/streams_group_epochs``.

State: the latest record of each key (group; group and member) by (offsets partition, log
offset), a tombstone as the latest record deleting it (as for KIP-848 groups). A task is
``(subtopology_id, partition)``; each member holds active, standby and warm-up tasks, in its
current assignment (what it holds now, with the tasks pending revocation it still holds) and in
its target assignment (what the group coordinator computed for the assignment epoch).

Findings (``finding``), from the rules of Apache Kafka's group coordinator
(``group-coordinator/.../streams/``: ``StreamsGroup.java``, ``CurrentAssignmentBuilder.java``,
``TasksTuple.java``):

- ``active_task_held_twice``: an active task in the current assignments of two members (not
  counting one pending revocation: the hand-off);
- ``active_task_unassigned``: a task of a subtopology (partitions 0..n-1, n the most partitions
  of its source topics in ``topic_partitions``) no member's target assignment holds active;
- ``standby_with_active``: a member holding the same task standby (or warm-up) and active;
- ``member_epoch_ahead``: a member's epoch above the group's assignment epoch, or the
  assignment epoch above the group epoch;
- ``member_unresponsive``: a member behind the group's assignment epoch with no record of its
  own since that epoch's target assignment was written, while the group's log (its streams
  records and offset commits) went on for ``SILENT_MS`` past it: a live member heartbeats every
  ``group.streams.heartbeat.interval.ms`` and its first heartbeat of a new epoch writes its
  assignment (the new epoch, or the tasks it has to revoke), so this one stopped heartbeating
  (its process crashed) and the coordinator still counts it until the session timeout. One row
  per active task it still holds (nobody processes them), or one without a task. A member
  reconciling within the heartbeat intervals is a transition, not a finding.

Every function is DataFrame -> DataFrame (no UDF).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.spark import group_epochs
from pipelines.spark.share_groups import _latest

_TASKS = "array<struct<subtopologyId:string,partitions:array<int>>>"
_TOPIC_INFO = "array<struct<name:string,partitions:int>>"
JSON_SCHEMAS = {
    "StreamsGroupMetadata": "struct<epoch:int>",
    "StreamsGroupMemberMetadata": "struct<instanceId:string,rackId:string,clientId:string,clientHost:string,"
                                  "topologyEpoch:int,processId:string>",
    "StreamsGroupTargetAssignmentMetadata": "struct<assignmentEpoch:int>",
    "StreamsGroupTargetAssignmentMember": f"struct<activeTasks:{_TASKS},standbyTasks:{_TASKS},warmupTasks:{_TASKS}>",
    "StreamsGroupCurrentMemberAssignment": f"struct<memberEpoch:int,previousMemberEpoch:int,state:int,"
                                           f"activeTasks:{_TASKS},standbyTasks:{_TASKS},warmupTasks:{_TASKS},"
                                           f"activeTasksPendingRevocation:{_TASKS},"
                                           f"standbyTasksPendingRevocation:{_TASKS},"
                                           f"warmupTasksPendingRevocation:{_TASKS}>",
    "StreamsGroupTopology": f"struct<epoch:int,subtopologies:array<struct<subtopologyId:string,"
                            f"sourceTopics:array<string>,repartitionSinkTopics:array<string>,"
                            f"stateChangelogTopics:{_TOPIC_INFO},repartitionSourceTopics:{_TOPIC_INFO}>>>",
}
KINDS = ("active", "standby", "warmup")
# Kafka's default group.streams.heartbeat.interval.ms; a member silent for two is unresponsive
HEARTBEAT_MS = 5_000
SILENT_MS = 2 * HEARTBEAT_MS


def _live(records: DataFrame, record_type: str, *key: str) -> DataFrame:
    typed = records.where(F.col("record_type") == record_type)
    return _latest(typed, *key).withColumn("v", F.from_json("fields", JSON_SCHEMAS[record_type]))


def topology(records: DataFrame) -> DataFrame:
    """``core/streams_group_topology``: per group's live topology, one row per (subtopology,
    topic, role) - role source, repartition_source, repartition_sink or changelog;
    ``partitions`` where the topology declares it (internal topics)."""
    subs = _live(records, "StreamsGroupTopology", "group_id").select(
        "group_id", F.col("v.epoch").alias("topology_epoch"), F.explode("v.subtopologies").alias("s"))

    def role(name: str, column: str, info: bool) -> DataFrame:
        t = F.explode(F.col(f"s.{column}")).alias("t")
        out = subs.select("group_id", "topology_epoch", F.col("s.subtopologyId").alias("subtopology_id"), t)
        return out.select("group_id", "topology_epoch", "subtopology_id",
                          (F.col("t.name") if info else F.col("t")).alias("topic"), F.lit(name).alias("role"),
                          (F.col("t.partitions") if info else F.lit(None).cast("int")).alias("partitions"))

    return (role("source", "sourceTopics", False).unionByName(role("repartition_sink", "repartitionSinkTopics", False))
            .unionByName(role("changelog", "stateChangelogTopics", True))
            .unionByName(role("repartition_source", "repartitionSourceTopics", True)))


def _task_rows(frame: DataFrame, source: str, column: str, kind: str, pending: bool) -> DataFrame:
    t = frame.select("group_id", "member_id", "member_epoch", F.explode(F.col(f"v.{column}")).alias("t"))
    return t.select("group_id", "member_id", "member_epoch", F.lit(source).alias("assignment"),
                    F.lit(kind).alias("task_kind"), F.col("t.subtopologyId").alias("subtopology_id"),
                    F.explode("t.partitions").alias("partition"), F.lit(pending).alias("pending_revocation"))


def tasks(records: DataFrame) -> DataFrame:
    """``core/streams_group_tasks``: per live member, one row per task it holds (``assignment``
    current) or is targeted (target), with its kind, the member's process/client and epochs."""
    member = _live(records, "StreamsGroupMemberMetadata", "group_id", "member_id").select(
        "group_id", "member_id", F.col("v.processId").alias("process_id"), F.col("v.clientId").alias("client_id"),
        F.col("v.topologyEpoch").alias("topology_epoch"))
    current = _live(records, "StreamsGroupCurrentMemberAssignment", "group_id", "member_id").withColumn(
        "member_epoch", F.col("v.memberEpoch"))
    target = _live(records, "StreamsGroupTargetAssignmentMember", "group_id", "member_id").withColumn(
        "member_epoch", F.lit(None).cast("int"))
    rows = None
    for kind in KINDS:
        cap = "warmup" if kind == "warmup" else kind
        for frame in (_task_rows(current, "current", f"{cap}Tasks", kind, False),
                      _task_rows(current, "current", f"{cap}TasksPendingRevocation", kind, True),
                      _task_rows(target, "target", f"{cap}Tasks", kind, False)):
            rows = frame if rows is None else rows.unionByName(frame)
    group = _live(records, "StreamsGroupMetadata", "group_id").select("group_id", F.col("v.epoch").alias("group_epoch"))
    epoch = _live(records, "StreamsGroupTargetAssignmentMetadata", "group_id").select(
        "group_id", F.col("v.assignmentEpoch").alias("assignment_epoch"))
    return (rows.join(member, ["group_id", "member_id"], "left").join(group, "group_id", "left")
            .join(epoch, "group_id", "left")
            .select("group_id", "member_id", "process_id", "client_id", "member_epoch", "topology_epoch",
                    "group_epoch", "assignment_epoch", "assignment", "task_kind", "subtopology_id", "partition",
                    "pending_revocation"))


STABLE = 1  # the member state of StreamsGroupCurrentMemberAssignment: 1 stable, 2 unrevoked, 3 unreleased tasks


def _typed(records: DataFrame, record_type: str) -> DataFrame:
    return (records.where(F.col("record_type") == record_type)
            .withColumn("v", F.from_json("fields", JSON_SCHEMAS[record_type]))
            .withColumn("pos", F.struct("offsets_partition", "log_offset")))


def _tasks_of(frame: DataFrame, column: str, *key: str) -> DataFrame:
    t = frame.select(*key, F.explode(F.col(f"v.{column}")).alias("t"))
    return t.select(*key, F.col("t.subtopologyId").alias("subtopology_id"),
                    F.explode("t.partitions").alias("partition"))


def epochs(records: DataFrame) -> DataFrame:
    """``core/streams_group_epochs``: every assignment epoch of every Streams group in the
    records (each StreamsGroupTargetAssignmentMetadata record, not only the latest), audited:
    the target assignment the coordinator computed for it (each member's latest target record
    before it, members whose target was deleted left out) with its active tasks targeted to more
    than one member and its tasks targeted standby (or warm-up) and active to one member; and
    whether every targeted member reached it (a current assignment record at that epoch, state
    stable) before the next epoch's target. An epoch that never settled and was superseded is a
    transition (``is_transition``), never a fault; the last one, still reconciling at the end of
    the records, has ``is_transition`` null."""
    key = ("group_id", "assignment_epoch", "pos")
    order = Window.partitionBy("group_id").orderBy("pos")
    meta = (_typed(records, "StreamsGroupTargetAssignmentMetadata")
            .where(~F.coalesce(F.col("is_tombstone"), F.lit(False)))
            .select("group_id", F.col("v.assignmentEpoch").alias("assignment_epoch"), "pos",
                    F.col("batch_timestamp").alias("target_at"))
            .withColumn("next_pos", F.lead("pos").over(order)))
    member = _typed(records, "StreamsGroupTargetAssignmentMember").select(
        "group_id", "member_id", F.col("pos").alias("member_pos"), "is_tombstone", "v")
    target = (meta.join(member, "group_id").where(F.col("member_pos") < F.col("pos"))
              .withColumn("_last", F.max("member_pos").over(Window.partitionBy(*key, "member_id")))
              .where((F.col("member_pos") == F.col("_last")) & ~F.coalesce(F.col("is_tombstone"), F.lit(False))))
    members = group_epochs.members(target, list(key))
    active = _tasks_of(target, "activeTasks", *key, "member_id")
    owners = active.groupBy(*key, "subtopology_id", "partition").agg(F.countDistinct("member_id").alias("n"))
    active_counts = owners.groupBy(*key).agg(
        F.count(F.lit(1)).alias("active_tasks"),
        F.sum(F.when(F.col("n") > 1, 1).otherwise(0)).alias("active_targeted_twice"))
    standby = _tasks_of(target, "standbyTasks", *key, "member_id").unionByName(
        _tasks_of(target, "warmupTasks", *key, "member_id"))
    both = (standby.join(active, [*key, "member_id", "subtopology_id", "partition"])
            .groupBy(*key).agg(F.count(F.lit(1)).alias("standby_with_active")))
    current = _typed(records, "StreamsGroupCurrentMemberAssignment").where(
        ~F.coalesce(F.col("is_tombstone"), F.lit(False))).select(
        "group_id", "member_id", F.col("pos").alias("current_pos"), F.col("batch_timestamp").alias("current_at"),
        F.col("v.memberEpoch").alias("member_epoch"), F.col("v.state").alias("state"))
    reached = group_epochs.reached(meta, current, target, list(key), STABLE)
    out = (meta.join(members, list(key), "left").join(active_counts, list(key), "left")
           .join(both, list(key), "left").join(reached, list(key), "left")
           .fillna(0, ["members", "active_tasks", "active_targeted_twice", "standby_with_active", "members_settled"]))
    return out.select(
        "group_id", "assignment_epoch", F.col("pos.offsets_partition").alias("offsets_partition"),
        F.col("pos.log_offset").alias("log_offset"), "target_at", *group_epochs.settlement(),
        F.col("active_tasks").cast("int").alias("active_tasks"),
        F.col("active_targeted_twice").cast("int").alias("active_targeted_twice"),
        F.col("standby_with_active").cast("int").alias("standby_with_active"))


def _finding(frame: DataFrame, finding: str, detail) -> DataFrame:
    return frame.select("group_id", "member_id", "subtopology_id", "partition", F.lit(finding).alias("finding"),
                        detail.alias("detail"))


def unresponsive(records: DataFrame, commits: DataFrame, task_rows: DataFrame) -> DataFrame:
    """``member_unresponsive`` findings from the streams group records, the groups' offset
    commits (``group_id, commit_timestamp``) and ``core/streams_group_tasks``."""
    member = _live(records, "StreamsGroupCurrentMemberAssignment", "group_id", "member_id").select(
        "group_id", "member_id", F.col("v.memberEpoch").alias("member_epoch"),
        F.col("batch_timestamp").alias("member_at"))
    epoch = _live(records, "StreamsGroupTargetAssignmentMetadata", "group_id").select(
        "group_id", F.col("v.assignmentEpoch").alias("assignment_epoch"), F.col("batch_timestamp").alias("epoch_at"))
    clock = (records.select("group_id", F.col("batch_timestamp").alias("at"))
             .unionByName(commits.select("group_id", F.col("commit_timestamp").alias("at")))
             .groupBy("group_id").agg(F.max("at").alias("last_at")))
    silent_ms = (F.col("last_at").cast("double") - F.col("epoch_at").cast("double")) * 1000
    silent = (member.join(epoch, "group_id").join(clock, "group_id")
              .where((F.col("member_epoch") < F.col("assignment_epoch")) & (F.col("member_at") < F.col("epoch_at"))
                     & (silent_ms >= SILENT_MS))
              .withColumn("silent_s", F.round(silent_ms / 1000).cast("long")))
    held = task_rows.where((F.col("assignment") == "current") & (F.col("task_kind") == "active")).select(
        "group_id", "member_id", "subtopology_id", "partition")
    rows = silent.join(held, ["group_id", "member_id"], "left")
    return _finding(rows, "member_unresponsive", F.concat_ws(
        " ", F.lit("member epoch"), F.col("member_epoch").cast("string"), F.lit("behind assignment epoch"),
        F.col("assignment_epoch").cast("string"), F.lit("and no record of the member for"),
        F.col("silent_s").cast("string"), F.lit("s of the group's log after that epoch's target assignment")))


def findings(task_rows: DataFrame, topo: DataFrame, topic_partitions: DataFrame,
             silent: DataFrame | None = None) -> DataFrame:
    """``core/streams_group_findings`` from the tables above, the cluster's ``topic,
    partition`` and the ``member_unresponsive`` rows (``unresponsive``) where given."""
    current = task_rows.where(F.col("assignment") == "current")
    active = current.where((F.col("task_kind") == "active") & ~F.col("pending_revocation"))
    twice = (active.groupBy("group_id", "subtopology_id", "partition")
             .agg(F.sort_array(F.collect_set("member_id")).alias("members"))
             .where(F.size("members") > 1).withColumn("member_id", F.lit(None).cast("string")))
    twice = _finding(twice, "active_task_held_twice",
                     F.concat(F.lit("active on "), F.array_join("members", ", ")))
    counts = (topo.where(F.col("role") == "source").join(topic_partitions.select("topic", "partition"), "topic")
              .groupBy("group_id", "subtopology_id").agg((F.max("partition") + 1).alias("n")))
    expected = counts.select("group_id", "subtopology_id", F.explode(F.sequence(F.lit(0), F.col("n") - 1))
                             .alias("partition"))
    targeted = task_rows.where((F.col("assignment") == "target") & (F.col("task_kind") == "active")).select(
        "group_id", "subtopology_id", "partition")
    unassigned = expected.join(targeted, ["group_id", "subtopology_id", "partition"], "left_anti").withColumn(
        "member_id", F.lit(None).cast("string"))
    unassigned = _finding(unassigned, "active_task_unassigned",
                          F.lit("a task of the subtopology no member's target assignment holds active"))
    standby = current.where(F.col("task_kind") != "active").select(
        "group_id", "member_id", "subtopology_id", "partition", "task_kind")
    both = standby.join(active.select("group_id", "member_id", "subtopology_id", "partition"),
                        ["group_id", "member_id", "subtopology_id", "partition"])
    both = _finding(both, "standby_with_active", F.concat(F.col("task_kind"), F.lit(" and active on one member")))
    epochs = current.select("group_id", "member_id", "member_epoch", "assignment_epoch", "group_epoch").distinct()
    ahead = epochs.where((F.col("member_epoch") > F.col("assignment_epoch"))
                         | (F.col("assignment_epoch") > F.col("group_epoch"))).select(
        "group_id", "member_id", F.lit(None).cast("string").alias("subtopology_id"),
        F.lit(None).cast("int").alias("partition"), "member_epoch", "assignment_epoch", "group_epoch")
    ahead = _finding(ahead, "member_epoch_ahead", F.concat_ws(
        " ", F.lit("member epoch"), F.col("member_epoch").cast("string"), F.lit("assignment epoch"),
        F.col("assignment_epoch").cast("string"), F.lit("group epoch"), F.col("group_epoch").cast("string")))
    out = twice.unionByName(unassigned).unionByName(both).unionByName(ahead)
    return out if silent is None else out.unionByName(silent)


def core_frames(spark, ctx, topic_parts: DataFrame) -> dict[str, DataFrame]:
    """The four ``core/streams_*`` tables of ``ctx.run_id`` (empty when it has no streams
    group): ``topic_parts`` is ``core/topic_partitions``, with the log ends the partitions of
    the source topics."""
    from pipelines.spark.io import read_spark

    def raw(table):
        return read_spark(spark, ctx.warehouse, table, ctx.run_id, with_run_id=False)

    records = raw("raw/group_coordinator_records").where(F.col("key_type").between(17, 24))
    parts = (topic_parts.select("topic", "partition")
             .unionByName(raw("raw/log_end_offsets").select("topic", "partition")).distinct())
    commits = raw("raw/offset_commits").join(records.select("group_id").distinct(), "group_id", "left_semi")
    topo, task_rows = topology(records), tasks(records)
    return {
        "core/streams_group_topology": topo,
        "core/streams_group_tasks": task_rows,
        "core/streams_group_findings": findings(task_rows, topo, parts, unresponsive(records, commits, task_rows)),
        "core/streams_group_epochs": epochs(records),
    }
