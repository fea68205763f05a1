"""Every rebalance of the Kafka-era groups, and the audit of every settled state, from the
``__consumer_offsets`` records of every generation: the Kafka sibling of
:mod:`pipelines.spark.rebalances` (ZooKeeper), into the same ``core/rebalance_states`` and
``core/settled_audit`` (``source = 'kafka'``, ``group_protocol`` classic | consumer, the state
keyed by the record that began it: ``offsets_partition``, ``log_offset``). DataFrame ->
DataFrame, no UDF.

Classic groups (``raw/group_metadata``, ``raw/group_members``, ``raw/group_assignments``):

- A group's records in log order (``tables.GROUP_RECORD_ORDER``), ``protocol_type`` consumer;
  a tombstone deletes the group. A state is a generation: it begins with the first record of
  a generation number (the first record of the group, or the first after a tombstone, or one
  whose generation differs from the record before) and lasts until the next state or
  tombstone. Later records of the same generation (a static member's new member id) are the
  same state; the audit reads the generation's last record (the assignment it ended with).
- ``started_at``: the record's ``state_timestamp`` (GroupMetadataValue v2+; null before).
- ``trigger``: the member change from the previous generation (``first`` after none or a
  tombstone; ``member_joined``, ``member_left``, both ``members_replaced``; the same members
  with another subscription ``subscription_changed``; else ``same_members``).
- Expected owners: the build's Kafka assignors (:func:`pipelines.spark.assignment_kafka.expected_assignment`:
  range, round-robin; other protocols structurally only) over the generation's members and
  the run's partitions; the state is folded into the group name (``group \\x01 offsets
  partition \\x01 log offset``, and ``\\x01 latest`` for the group's latest record when it is
  a live consumer group's) so one call computes every generation of every group. The
  assignment the leader wrote is audited against them by :func:`pipelines.spark.audit.audit`
  (``duplicate_owner``: a partition in two members' assignments, counted as
  ``double_claimed_partitions``). The latest state's expected and audit rows are the build's
  ``core/expected_assignment`` and ``core/assignment_audit`` rows of the group. The leader
  writes the whole assignment at once, so a generation is settled (:mod:`pipelines.settle`)
  when nothing follows its last record for the settle window (to the next state, or to the
  history's end: the latest group record or offset commit time of the run); a generation
  ended by the group's deletion has no known end (not settled), one without times
  (GroupMetadataValue v0/v1) cannot be timed (settled).

KIP-848 groups (``raw/consumer_group_*``): a state is a group epoch (ConsumerGroupMetadata
records, the same rule as generations). Expected owners: the server's target of that epoch
(the first ConsumerGroupTargetAssignmentMetadata record of the epoch inside the state, the
target member records as of it) of the members still in the group at the state's end: a
member whose records are tombstoned left cleanly and is never an expected owner. Settled: the
assignment epoch equals the group epoch (that target metadata record) and every such member
wrote a current assignment at the epoch or later holding exactly its target (assigned plus
pending revocation): ``settled_log_offset`` is the later of the two; never, if one did not
before the next epoch; at its start, when every member left. The audit compares the target
with what each member held at the end of the state (current assignment plus partitions
pending revocation). The records of one ``__consumer_offsets`` batch are one coordinator
operation (``batch_offset``): a state's end is where the batch of the record that ended it
begins, so nothing between a member's tombstones and the next epoch written with them is
seen, and a state that began inside that batch is never settled. The records carry no
time of their own: ``started_at`` is the batch time of the ConsumerGroupMetadata record that began
the epoch (``batch_timestamp``: the first timestamp of its batch in ``__consumer_offsets``, the
append time for LogAppendTime; null when the batch has none), ``settled_at`` that of the
record that settled it (the target metadata, or the last targeted member's stable assignment).

Known limits: partition counts are the run's (a topic that grew is audited with today's
count in old generations).
"""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.context import RunContext
from pipelines.settle import DEFAULT_RULE, SettleRule
from pipelines.spark import assignment_kafka, assignment_kip848
from pipelines.spark.audit import OUT, audit
from pipelines.spark.io import read_spark, reused
from pipelines.spark.settling import millis, rebalance_runs
from pipelines.warehouse.reading import row_count
from pipelines.warehouse.tables import GROUP_RECORD_ORDER

SOURCE = "kafka"
SEP = "\x01"
LATEST = "latest"
KEY = ["group_id", "offsets_partition", "log_offset"]
STATE = ["group_id", "state_partition", "state_offset"]  # the record that began the state


def _log_order() -> list[Column]:
    return [F.col(c) for c in GROUP_RECORD_ORDER]


def _fold(latest: Column | None = None) -> Column:
    """The state folded into the group name; ``latest`` true: a fourth part marks the group's
    latest state (the one of ``core/assignment_audit``)."""
    parts = ["group_id", F.col("state_partition").cast("string"), F.col("state_offset").cast("string")]
    return F.concat_ws(SEP, *parts, *([] if latest is None else [F.when(latest, F.lit(LATEST))]))


def _unfold(df: DataFrame) -> DataFrame:
    """``df`` with its folded group names (:func:`_fold`) split: the group, ``state_partition,
    state_offset`` and ``_latest``."""
    parts = F.split("group_id", SEP)
    return df.withColumns({
        "state_partition": F.get(parts, 1).cast("int"),
        "state_offset": F.get(parts, 2).cast("bigint"),
        "_latest": F.get(parts, 3).isNotNull(),
        "group_id": F.get(parts, 0),
    })


def state_starts(records: DataFrame, number: str) -> DataFrame:
    """The records of ``records`` (``group_id, <number>, is_tombstone, offsets_partition,
    log_offset``) that begin a state, with ``state_partition, state_offset`` (their place),
    ``_seq`` (the state's order in its group), ``_after_none`` (first of the group or after a
    tombstone) and ``next_log_offset`` (the next state or tombstone; null: the last)."""
    w = Window.partitionBy("group_id").orderBy(*_log_order())
    prev_tomb, prev_number = F.lag("is_tombstone").over(w), F.lag(number).over(w)
    after_none = prev_tomb.isNull() | prev_tomb
    begins = ~F.col("is_tombstone") & (after_none | ~prev_number.eqNullSafe(F.col(number)))
    marked = records.withColumns({"_begins": begins, "_after_none": after_none})
    bounds = marked.where(F.col("_begins") | F.col("is_tombstone")).withColumn(
        "next_log_offset", F.lead("log_offset").over(w)
    )
    return bounds.where("_begins").drop("_begins").withColumns({
        "state_partition": F.col("offsets_partition"),
        "state_offset": F.col("log_offset"),
        "_seq": F.row_number().over(Window.partitionBy("group_id").orderBy(*_log_order())),
    })


def _timed(starts: DataFrame, time: str) -> DataFrame:
    """``starts`` with ``started_at``, the ``time`` of the record that began the state, and
    ``next_at``, the next state's, when the next state is what ended this one (not a tombstone)."""
    nxt = Window.partitionBy("group_id").orderBy("_seq")
    follows = F.lead("state_offset").over(nxt) == F.col("next_log_offset")
    return starts.withColumns({"started_at": F.col(time), "next_at": F.when(follows, F.lead(time).over(nxt))})


def _of_state(records: DataFrame, starts: DataFrame) -> DataFrame:
    """``records`` (non-tombstones) with the ``state_partition, state_offset`` of the state each
    falls in (the last start at or before it)."""
    s = starts.select("group_id", "state_partition", "state_offset", "next_log_offset")
    inside = (F.col("log_offset") >= F.col("state_offset")) & (
        F.col("next_log_offset").isNull() | (F.col("log_offset") < F.col("next_log_offset"))
    )
    return records.where(~F.col("is_tombstone")).join(s, "group_id").where(inside).drop("next_log_offset")


def _trigger(now: Column, before: Column, subs_now: Column, subs_before: Column, first: Column) -> Column:
    joined, left = F.size(F.array_except(now, before)) > 0, F.size(F.array_except(before, now)) > 0
    return (
        F.when(first, "first")
        .when(joined & left, "members_replaced")
        .when(joined, "member_joined")
        .when(left, "member_left")
        .when(~subs_now.eqNullSafe(subs_before), "subscription_changed")
        .otherwise("same_members")
    )


def _with_triggers(states: DataFrame) -> DataFrame:
    """``states`` (``_members``: sorted member ids, ``_subs``: sorted member/topic pairs) with
    ``trigger``, compared with the group's previous state."""
    w = Window.partitionBy("group_id").orderBy("_seq")
    before = F.coalesce(F.lag("_members").over(w), F.array().cast("array<string>"))
    trigger = _trigger(F.coalesce("_members", F.array().cast("array<string>")), before, F.col("_subs"),
                       F.lag("_subs").over(w), F.col("_after_none"))
    return states.withColumn("trigger", trigger)


def _audited(inputs: dict[str, DataFrame]) -> DataFrame:
    """:func:`audit` of folded group names, unfolded, with ``observed_owner`` (the owners, joined)."""
    rows = _unfold(audit(**inputs))
    return rows.withColumn("observed_owner", F.nullif(F.array_join("observed_owners", ", "), F.lit("")))


def _summary(audited: DataFrame, expected: DataFrame) -> DataFrame:
    """Per state: the counts of ``core/rebalance_states`` and ``_ok`` (every row ok)."""
    n_expected = _unfold(expected).groupBy(*STATE).agg(F.count(F.lit(1)).cast("int").alias("expected_partitions"))

    def count(status: str) -> Column:
        return F.sum((F.col("status") == status).cast("int")).cast("int")

    counts = audited.groupBy(*STATE).agg(
        F.bool_and(F.col("status") == "ok").alias("_ok"),
        count("unowned").alias("unowned_at_end"),
        count("duplicate_owner").alias("double_claimed_partitions"),
        count("wrong_owner").alias("wrong_owner_partitions"),
        count("unexpected_partition").alias("unexpected_partitions"),
    )
    return n_expected.join(counts, STATE, "full_outer")


def _state_key(protocol: str) -> list[Column | str]:
    """The first columns of both core tables' Kafka rows: the state's group and the record that
    began it."""
    return [
        F.lit(SOURCE).alias("source"),
        "group_id",
        F.lit(protocol).alias("group_protocol"),
        "generation",
        F.col("state_partition").alias("offsets_partition"),
        F.col("state_offset").alias("log_offset"),
    ]


def _states_table(states: DataFrame, summary: DataFrame, protocol: str, settled: Column,
                  settled_at: Column, settled_offset: Column, rule: SettleRule) -> DataFrame:
    """``core/rebalance_states`` rows (the ZooKeeper columns null), with their rebalances
    (:func:`~pipelines.spark.settling.rebalance_runs`). ``states`` has ``_end_at``: the latest
    time the run's records of these groups show (the end of their history)."""
    rows = states.join(summary, STATE, "left").withColumn("_ok", F.coalesce("_ok", F.lit(True)))
    zero = F.lit(0)
    table = rows.select(
        *_state_key(protocol),
        "started_at",
        "trigger",
        "next_log_offset",
        "next_at",
        F.coalesce(settled, F.lit(False)).alias("settled"),
        settled_offset.alias("settled_log_offset"),
        settled_at.alias("settled_at"),
        F.coalesce("expected_partitions", zero).alias("expected_partitions"),
        F.coalesce("unowned_at_end", zero).alias("unowned_partitions"),
        F.coalesce("double_claimed_partitions", zero).alias("double_claimed_partitions"),
        F.coalesce("wrong_owner_partitions", zero).alias("wrong_owner_partitions"),
        F.coalesce("unowned_at_end", zero).alias("unowned_at_end"),
        F.coalesce("unexpected_partitions", zero).alias("unexpected_partitions"),
        "assignor",
        "_end_at",
    )
    # an unsettled state lasted to the next state, or to the end of the history when it is the
    # group's last (a state ended by the group's deletion has no known end)
    until = F.coalesce("next_at", F.when(F.col("next_log_offset").isNull(), F.col("_end_at")))
    runs = rebalance_runs(table, ["group_id"], _log_order(), rule, until, F.col("trigger") == "first")
    return reused(runs.drop("_end_at"))


def _audit_table(audited: DataFrame, table: DataFrame, protocol: str) -> DataFrame:
    """``core/settled_audit`` rows (the ZooKeeper columns null) of ``audited``, with the
    ``settled`` flag of their state's row in ``table`` (:func:`_states_table`)."""
    keyed = table.select(F.col("offsets_partition").alias("state_partition"),
                         F.col("log_offset").alias("state_offset"), "group_id", "generation", "started_at", "next_at",
                         "settled")
    return audited.join(keyed, STATE).select(
        *_state_key(protocol),
        "topic",
        "partition",
        "broker_id",
        "expected_owner",
        "observed_owner",
        "status",
        F.col("started_at").alias("held_from"),
        F.col("next_at").alias("held_until"),
        "settled",
    )


def _latest_time(*frames: tuple[DataFrame, str]) -> DataFrame:
    """One row, ``_end_at``: the latest of the ``(frame, time column)`` pairs' times. Each
    frame's latest on its own, right over its scan: an Iceberg table answers that from its
    files' column bounds (Spark's aggregate push-down) instead of reading every row of
    ``raw/offset_commits``, which grows with the commits."""
    times = [df.agg(F.max(c).alias("_t")) for df, c in frames]
    union = times[0]
    for t in times[1:]:
        union = union.unionByName(t)
    return union.agg(F.max("_t").alias("_end_at"))


class Classic(NamedTuple):
    """The classic groups' frames (:func:`classic_generations`)."""

    states: DataFrame  # core/rebalance_states rows
    audit: DataFrame  # core/settled_audit rows
    expected: DataFrame  # core/expected_assignment rows of each group's latest state
    latest_audit: DataFrame  # core/assignment_audit rows of the same states
    known: DataFrame  # the partitions their audit knows (source, topic, partition, broker_id)


def classic_generations(group_metadata: DataFrame, group_members: DataFrame, group_assignments: DataFrame,
                        partitions: DataFrame, rule: SettleRule = DEFAULT_RULE,
                        more_times: list[tuple[DataFrame, str]] = (), more_known: DataFrame | None = None) -> Classic:
    """The rows of the classic groups' generations, and of each group's latest state (the group's
    latest record, when it is a live consumer group's: :func:`assignment_kafka.latest_groups`)
    the expected and audit rows of the build's main tables: one computation of both.
    ``partitions``: :func:`assignment_kafka.topic_partitions` of the run; ``rule``: the settle
    window and stuck limit; ``more_times``: (frame, time column) of the run's other
    ``__consumer_offsets`` records, whose times extend the history's end past the last group
    record (as :func:`build` gathers them); ``more_known``: the audit's other known partitions
    (``source, topic, partition, broker_id``: the KIP-848 groups' topics)."""
    # a record without a group id (the contract allows a null) is a state of no group
    consumer = group_metadata.where(
        F.col("group_id").isNotNull() & (F.col("is_tombstone") | (F.col("protocol_type") == "consumer")))
    records = consumer.select(*KEY, "generation", "protocol", "state_timestamp",
                              F.coalesce("is_tombstone", F.lit(False)).alias("is_tombstone"))
    starts = reused(_timed(state_starts(records, "generation"), "state_timestamp"))
    # the generation's last record: what the state ended with, and since when
    last = _of_state(records, starts).groupBy(*STATE).agg(
        F.max(F.struct(*_log_order(), "protocol", "state_timestamp")).alias("_last")
    ).select(*STATE, F.col("_last.log_offset").alias("log_offset"),
             F.col("_last.offsets_partition").alias("offsets_partition"), F.col("_last.protocol").alias("protocol"),
             F.col("_last.state_timestamp").alias("_changed_at"), F.col("_last.log_offset").alias("_changed_offset")
             ).join(assignment_kafka.latest_groups(group_metadata).select(*KEY, F.lit(True).alias("_latest")), KEY,
                    "left")
    of_last = last.select(*STATE, *KEY, "_latest")
    folded = last.select(_fold(F.col("_latest")).alias("group_id"), "offsets_partition", "log_offset", "protocol")

    def fold_rows(rows: DataFrame) -> DataFrame:
        return rows.join(of_last, KEY).withColumn("group_id", _fold(F.col("_latest"))).drop(
            "state_partition", "state_offset", "_latest")

    members = reused(assignment_kafka.latest_members(folded, fold_rows(group_members)))
    src = F.lit(SOURCE).alias("source")
    expected = reused(assignment_kafka.expected_assignment(members, partitions))
    known = partitions.select(src, "topic", "partition", "broker_id")
    audited = reused(_audited({
        "expected": expected,
        "observed": assignment_kafka.observed_owners(folded, fold_rows(group_assignments)),
        "registered": members.select(src, "group_id", "owner"),
        "subscribed": members.select(src, "group_id", F.explode("subscribed_topics").alias("topic")),
        "known": known if more_known is None else known.unionByName(more_known),
    }))

    sets = _unfold(members.select(
        "group_id", "owner", F.array_join(F.array_sort(F.coalesce("subscribed_topics", F.array())), ",").alias("_t")
    )).groupBy(*STATE).agg(
        F.array_sort(F.collect_list("owner")).alias("_members"),
        F.array_sort(F.collect_list(F.concat_ws("=", "owner", "_t"))).alias("_subs"),
    )
    assignors = _unfold(expected).groupBy(*STATE).agg(F.first("assignor", ignorenulls=True).alias("assignor"))
    end_at = _latest_time((records, "state_timestamp"), *more_times)
    states = reused(
        _with_triggers(starts.join(sets, STATE, "left")).join(assignors, STATE, "left")
        .join(last.select(*STATE, "_changed_at", "_changed_offset"), STATE, "left").crossJoin(F.broadcast(end_at))
    )
    # the leader writes the whole assignment at once: settled when nothing follows it for the
    # settle window (records without times, before GroupMetadataValue v2, cannot be timed: settled)
    changed_at = F.coalesce("_changed_at", "started_at")
    quiet = millis(F.coalesce("next_at", F.when(F.col("next_log_offset").isNull(), F.col("_end_at")))) - millis(
        changed_at)
    settled = F.coalesce(quiet >= rule.window_ms, changed_at.isNull())
    table = _states_table(states, _summary(audited, expected), "classic", settled,
                          F.when(settled, changed_at), F.when(settled, F.col("_changed_offset")), rule)
    latest = _unfold(expected).where("_latest").drop("state_partition", "state_offset", "_latest")
    return Classic(table, _audit_table(audited, table, "classic"), latest, audited.where("_latest").select(*OUT),
                   known)


def _place() -> Column:
    """A record's log offset and batch time, ordered by the offset (``at``, ``time``)."""
    return F.struct(F.col("log_offset").alias("at"), F.col("batch_timestamp").alias("time"))


def _pairs(df: DataFrame, column: str) -> DataFrame:
    """``STATE, member_id, topic_id, partition`` of a list<struct<topic_id, partitions>> column."""
    return df.select(*STATE, "member_id", F.explode(column).alias("_t")).select(
        *STATE, "member_id", F.col("_t.topic_id").alias("topic_id"), F.explode("_t.partitions").alias("partition")
    )


def _as_of(records: DataFrame, bounds: DataFrame, before: str, inclusive: bool) -> DataFrame:
    """The latest record of each member per state among ``records`` placed before the state's
    ``before`` column (null: no bound; ``inclusive``: at it too), tombstones dropped."""
    b = F.col(before)
    placed = (F.col("log_offset") <= b) if inclusive else (F.col("log_offset") < b)
    rows = records.join(bounds.select(*STATE, before), "group_id").where(b.isNull() | placed)
    order = F.struct(*_log_order())
    w = Window.partitionBy(*STATE, "member_id")
    return rows.withColumn("_last", F.max(order).over(w)).where((order == F.col("_last")) & ~F.col("is_tombstone"))


def _partition_set(*lists: Column) -> Column:
    """The sorted ``topic_id:partition`` strings of list<struct<topic_id, partitions>> columns
    (null lists: none), to compare two holdings."""
    def flat(tps: Column) -> Column:
        return F.flatten(F.transform(F.coalesce(tps, F.array()), lambda t: F.transform(
            F.coalesce(t["partitions"], F.array()), lambda p: F.concat_ws(":", t["topic_id"], p.cast("string")))))

    out = flat(lists[0])
    for more in lists[1:]:
        out = F.concat(out, flat(more))
    return F.array_sort(out)


def _operation_ends(starts: DataFrame, meta: DataFrame) -> DataFrame:
    """``starts`` whose ``next_log_offset`` is where the operation that ended each state began:
    the records of one ``__consumer_offsets`` batch are one coordinator operation (a member's
    tombstones and the next epoch, say), so no state between them is seen; ``_one_operation``:
    the state began inside that batch (it is never settled). ``meta``: the group metadata
    records (``batch_offset``: the base offset of each one's batch; null: unknown, each
    record its own)."""
    batch = meta.groupBy("group_id", F.col("log_offset").alias("next_log_offset")).agg(
        F.min("batch_offset").alias("_next_batch"))
    return reused(starts.join(batch, ["group_id", "next_log_offset"], "left").withColumns({
        "next_log_offset": F.least("next_log_offset", F.coalesce("_next_batch", "next_log_offset")),
        "_one_operation": F.coalesce(F.col("_next_batch") <= F.col("state_offset"), F.lit(False)),
    }).drop("_next_batch"))


def consumer_states(raw: dict[str, DataFrame], topic_parts: DataFrame, state: dict[str, DataFrame],
                    rule: SettleRule = DEFAULT_RULE,
                    more_times: list[tuple[DataFrame, str]] = ()) -> tuple[DataFrame, DataFrame]:
    """(``core/rebalance_states``, ``core/settled_audit``) rows of the KIP-848 groups' epochs.
    ``raw``: the tables of :data:`assignment_kip848.RAW_TABLES`; ``state``: their
    :func:`assignment_kip848.state` (the build's, shared with the findings and the audit)."""
    meta = raw["raw/consumer_group_metadata"].where(F.col("group_id").isNotNull()).select(
        *KEY, F.col("group_epoch").alias("generation"), "is_tombstone", "batch_timestamp", "batch_offset")
    starts = reused(_timed(state_starts(meta, "generation"), "batch_timestamp"))
    ends = _operation_ends(starts, meta)
    # the epoch's target: its first target metadata record inside the state, the members' targets as of it
    tmeta = raw["raw/consumer_group_target_metadata"].select(*KEY, "assignment_epoch", "is_tombstone",
                                                              "batch_timestamp")
    target_at = (
        _of_state(tmeta, ends).join(starts.select(*STATE, "generation"), STATE)
        .where(F.col("assignment_epoch") == F.col("generation"))
        .groupBy(*STATE).agg(F.min(_place()).alias("_target"))
        .withColumn("_target_at", F.col("_target.at"))
    )
    names = assignment_kip848.topic_names(topic_parts, raw["raw/consumer_group_partition_metadata"])
    # a member whose records are tombstoned by the end of the state left it: never an expected owner
    live = _as_of(raw["raw/consumer_group_members"], ends, "next_log_offset", inclusive=False).select(
        *STATE, "member_id")
    targets = _as_of(raw["raw/consumer_group_target_assignments"], target_at, "_target_at", inclusive=True)
    targets = reused(targets.join(live, [*STATE, "member_id"], "left_semi"))
    target = reused(assignment_kip848.named(_pairs(targets, "topic_partitions"), names))
    # what each member held at the end of the state, and when its holding matched its target
    current = raw["raw/consumer_group_current_assignments"]
    held_rows = _as_of(current, ends, "next_log_offset", inclusive=False)
    held = reused(assignment_kip848.named(
        _pairs(held_rows, "assigned_partitions").unionByName(_pairs(held_rows, "partitions_pending_revocation")),
        names,
    ))
    targeted = targets.select(*STATE, "member_id")
    span = ends.select(*STATE, "generation", "next_log_offset")
    wants = targets.select(*STATE, "member_id", _partition_set(F.col("topic_partitions")).alias("_want"))
    holds = _partition_set(F.col("assigned_partitions"), F.col("partitions_pending_revocation"))
    reached = (
        current.where(~F.col("is_tombstone")).join(span, "group_id")
        .where((F.col("log_offset") >= F.col("state_offset")) & (F.col("member_epoch") >= F.col("generation"))
               & (F.col("next_log_offset").isNull() | (F.col("log_offset") < F.col("next_log_offset"))))
        .join(wants, [*STATE, "member_id"])
        .where(holds == F.col("_want"))
        .groupBy(*STATE, "member_id").agg(F.min(_place()).alias("_reached"))
    )
    epochs = (
        targeted.join(reached, [*STATE, "member_id"], "left").groupBy(*STATE)
        .agg(F.count(F.lit(1)).alias("_n"), F.count("_reached").alias("_r"), F.max("_reached").alias("_last"))
    )
    # settled: the assignment epoch reached the group epoch (its target metadata) and every
    # member still in the group holds exactly its target; a state whose members all left has
    # nothing to reconcile (settled at its start)
    present = live.select(*STATE).distinct().withColumn("_present", F.lit(True))
    settle = (
        ends.select(*STATE, "batch_timestamp", "_one_operation").join(target_at, STATE, "left")
        .join(epochs, STATE, "left").join(present, STATE, "left")
    ).select(
        *STATE,
        F.when(F.col("_one_operation"), F.lit(None))
        .when(F.col("_present").isNull(),
               F.struct(F.col("state_offset").alias("at"), F.col("batch_timestamp").alias("time")))
        .when(F.col("_target").isNotNull() & (F.coalesce("_n", F.lit(0)) == F.coalesce("_r", F.lit(0))),
              F.greatest("_target", "_last")).alias("_settled"),
    )
    # the members that made the epoch: those registered at its record (a later join is a later epoch)
    members = reused(_as_of(raw["raw/consumer_group_members"], starts, "state_offset", inclusive=True))

    src = F.lit(SOURCE).alias("source")
    folded = _fold().alias("group_id")
    expected = target.select(src, folded, "topic", "partition", F.lit(None).cast("int").alias("broker_id"),
                             F.col("member_id").alias("expected_owner"), F.lit("server target").alias("assignor"))
    owners = held.select(*STATE, "member_id").unionByName(targeted)
    subscribed = members.select(*STATE, F.explode("subscribed_topics").alias("topic")).unionByName(
        target.select(*STATE, "topic"))
    audited = reused(_audited({
        "expected": expected,
        "observed": held.select(src, folded, "topic", "partition", F.lit(None).cast("int").alias("broker_id"),
                                F.col("member_id").alias("owner")),
        "registered": owners.select(src, folded, F.col("member_id").alias("owner")),
        "subscribed": subscribed.select(src, folded, "topic"),
        "known": assignment_kip848.audit_inputs(state)["known"],
    }))

    sets = members.groupBy(*STATE).agg(
        F.array_sort(F.collect_list("member_id")).alias("_members"),
        F.array_sort(F.collect_list(F.concat_ws(
            "=", "member_id", F.array_join(F.array_sort(F.coalesce("subscribed_topics", F.array())), ","),
            F.coalesce("subscribed_topic_regex", F.lit(""))))).alias("_subs"),
        F.first("server_assignor", ignorenulls=True).alias("_assignor"),
        F.max(F.col("server_assignor").isNull().cast("int")).alias("_default"),
    ).withColumn("assignor", F.concat(
        F.when(F.col("_default") == 1, F.lit("uniform")).otherwise(F.col("_assignor")), F.lit(": server target")))
    end_at = _latest_time(*[(raw[t], "batch_timestamp") for t in assignment_kip848.RAW_TABLES], *more_times)
    states = reused(_with_triggers(starts.join(sets, STATE, "left")).join(settle, STATE, "left").crossJoin(
        F.broadcast(end_at)))
    settled = F.col("_settled").isNotNull()
    table = _states_table(states, _summary(audited, expected), "consumer", settled, F.col("_settled.time"),
                          F.col("_settled.at"), rule)
    return table, _audit_table(audited, table, "consumer")


def build(spark, ctx: RunContext, topic_parts: DataFrame,
          kip848: tuple[dict[str, DataFrame], dict[str, DataFrame]] | None,
          rule: SettleRule = DEFAULT_RULE) -> tuple[list[tuple[DataFrame, DataFrame]], Classic | None]:
    """(``core/rebalance_states``, ``core/settled_audit``) frames of the run's classic and
    KIP-848 groups, as many pairs as the run has kinds of group records; the ZooKeeper-era
    columns (``tables.ZOOKEEPER_STATE_COLUMNS``) are left to the writer (``io.conform``). ``kip848``:
    the KIP-848 raw frames and their :func:`assignment_kip848.state` (None: the run has no
    KIP-848 group records). Also the classic groups' :class:`Classic` (None: the run has no
    classic group records), whose latest states the build's main tables take. The classic
    groups' audit knows the KIP-848 groups' topics too, as the build's audit of both kinds
    always did."""
    wh, run_id = ctx.warehouse, ctx.run_id

    def read(t: str) -> DataFrame:
        return read_spark(spark, wh, t, run_id)

    # the history's end: the latest time of any __consumer_offsets record of the run
    times = []
    if row_count(wh, "raw/offset_commits", run_id):
        times.append((read("raw/offset_commits"), "commit_timestamp"))
    classic = read("raw/group_metadata") if row_count(wh, "raw/group_metadata", run_id) else None
    if classic is not None:
        times.append((classic, "state_timestamp"))
    if kip848 is not None:
        times += [(kip848[0][t], "batch_timestamp") for t in assignment_kip848.RAW_TABLES]
    out, generations = [], None
    if classic is not None:
        partitions = assignment_kafka.topic_partitions(topic_parts, read("raw/log_end_offsets"))
        more_known = None if kip848 is None else assignment_kip848.audit_inputs(kip848[1])["known"]
        generations = classic_generations(classic, read("raw/group_members"), read("raw/group_assignments"),
                                          partitions, rule, times, more_known)
        out.append((generations.states, generations.audit))
    if kip848 is not None:
        raw, state = kip848
        out.append(consumer_states(raw, topic_parts, state, rule, times))
    return out, generations
