"""Every rebalance of the ZooKeeper-era groups, and the audit of every settled state, from
``raw/znode_changes``. DataFrame -> DataFrame, no UDF.

- Intervals: each create/set/snapshot row of a path holds from its zxid until the next row of
  that path (a set, a delete), or to the end of the history (``until_zxid`` null).
- The values are parsed by the registry's own parsers (:mod:`pipelines.spark.registry`):
  registrations (``/consumers/<g>/ids/<c>``), topics (``/brokers/topics/<t>``) and owners.
- Triggers of a group: a change of its registrations (a consumer joined, left or changed its
  subscription: ``consumer``), of ``/brokers/ids`` while the group has a live consumer
  (``broker``), of a topic one of its live consumers subscribes to (``topic``); the first
  moment the history shows the group (its nodes in the snapshot: ``snapshot``). Several in
  one txn are one trigger (the first change names it).
- State k of a group lasts from its trigger's zxid to the next trigger's (or the end). Its
  expected owners are computed by the build's assignors (:mod:`pipelines.spark.assignment_zk`,
  range or round-robin) over the registrations and topics live at the trigger: the state is
  folded into the group and topic names (``group \\x01 zxid``), so one call computes every
  state of every group, and the names are unfolded afterwards.
- The owners a state ends with (the owner interval of each partition live at its end) are
  audited against them (``ok``, ``wrong_owner``, ``unowned``, ``unexpected_partition``).
- Settled (:mod:`pipelines.settle`): the state ended with every expected partition owned, and
  those owners were not changed for the settle window before the next trigger (or the end of
  the history): the seed's rebalance releases every owned partition before it writes the new
  owners, so a partition without an owner is a rebalance still at work. ``settled_zxid/at``:
  the last owner change of the state (its trigger when there was none): the latest among each
  final owner interval's start and the end of every other owner interval inside the state.
  A state that never settled is a transition: its audit rows are no finding. Rebalances and
  the stuck ones: :mod:`pipelines.spark.settling`.
- ``unowned_partitions``: expected partitions that had no owner at some moment of the state
  (before it settled, or until its end); ``double_claimed_partitions`` is 0 in ZooKeeper (one
  znode per partition), kept for the Kafka era's generations (dbt, ``marts/rebalances``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.context import RunContext
from pipelines.settle import DEFAULT_RULE, SettleRule
from pipelines.spark import assignment_zk, registry
from pipelines.spark.assignors import roundrobin_assign
from pipelines.spark.io import read_spark, reused, row_group_bounds
from pipelines.spark.schemas import empty
from pipelines.spark.settling import millis, rebalance_runs
from pipelines.warehouse.reading import row_count

SEP = "\x01"
NO_END = (1 << 63) - 1  # the end of an interval that lasts to the end of the history
_ZXID_SUM = "decimal(38,0)"  # zxid spans and their sums, past the bigint range


# The states, expected owners and audit reuse each other several times over; as plain
# DataFrames each reuse copies the whole subtree, and the demo's plan grew until Spark's
# analyzer ran for over half an hour. ``cache()`` keeps the tree (its lookup canonicalizes it);
# a local checkpoint (:func:`~pipelines.spark.io.reused`) replaces it: each such frame below is
# computed once and cut from its lineage.


def _no_null_broker() -> Column:
    return F.coalesce(F.col("broker_id"), F.lit(-1))


def intervals(changes: DataFrame, kind: str) -> DataFrame:
    """The rows of ``kind`` that hold a value, with ``until_zxid`` (null: to the end)."""
    by_path = Window.partitionBy("path").orderBy("zxid", "seq")
    rows = changes.where(F.col("kind") == kind).select(
        "path", F.col("value").alias("data"), F.col("time").alias("mtime"), "zxid", "op",
        F.lead("zxid").over(by_path).alias("until_zxid"),
    )
    return rows.where(F.col("op") != "delete").drop("op")


def _parsed(held: DataFrame, parser) -> DataFrame:
    """``held`` joined with the registry parser's good rows of its distinct (path, data)."""
    nodes = held.select("path", "data", "mtime").dropDuplicates(["path", "data"])
    good = registry.good(parser(registry.with_path_parts(nodes))).drop("mtime", "reason")
    return held.select("path", "data", "zxid", "until_zxid").join(good, ["path", "data"])


def _parsed_topics(held: DataFrame) -> DataFrame:
    """The partitions of every held ``/brokers/topics/<t>`` value (the registry's topic parser
    drops the path of its rows, so the interval's zxid rides in the topic name)."""
    nodes = held.select(F.concat_ws(SEP, "path", F.col("zxid").cast("string")).alias("path"), "data", "mtime")
    parts = registry.good(registry.parse_topics(registry.with_path_parts(nodes)))
    parts = parts.select(
        F.substring_index("topic", SEP, 1).alias("topic"),
        F.substring_index("topic", SEP, -1).cast("bigint").alias("zxid"),
        "partition",
        "broker_id",
    )
    spans = held.select("zxid", "until_zxid", F.get(F.split("path", "/"), 3).alias("topic"))
    return parts.join(spans, ["topic", "zxid"])


def _live_at(at: Column) -> Column:
    return (F.col("zxid") <= at) & (F.col("until_zxid").isNull() | (F.col("until_zxid") > at))


def triggers(changes: DataFrame, registrations: DataFrame) -> DataFrame:
    """``group_id, state_zxid, started_at, trigger, trigger_op, trigger_path`` per state start."""
    moved = changes.where(F.col("op") != "snapshot")
    own = moved.where(F.col("kind") == "consumer_ids").select(
        F.get(F.split("path", "/"), 2).alias("group_id"), "zxid", "seq", "time", F.lit("consumer").alias("trigger"),
        "op", "path",
    )
    live = registrations.select("group_id", "topic", F.col("zxid").alias("_from"), F.col("until_zxid").alias("_until"))
    alive = (F.col("_from") <= F.col("zxid")) & (F.col("_until").isNull() | (F.col("_until") > F.col("zxid")))
    brokers = moved.where(F.col("kind") == "broker_ids").join(live.select("group_id", "_from", "_until"), alive).select(
        "group_id", "zxid", "seq", "time", F.lit("broker").alias("trigger"), "op", "path",
    )
    topics = moved.where(F.col("kind") == "broker_topics").withColumn("topic", F.get(F.split("path", "/"), 3))
    topics = topics.join(live, ["topic"]).where(alive).select(
        "group_id", "zxid", "seq", "time", F.lit("topic").alias("trigger"), "op", "path",
    )
    first = (
        changes.where((F.col("op") == "snapshot") & F.col("kind").startswith("consumer"))
        .select(F.get(F.split("path", "/"), 2).alias("group_id"), "zxid", "time")
        .groupBy("group_id").agg(F.min("zxid").alias("zxid"), F.min("time").alias("time"))
        .select("group_id", "zxid", F.lit(-1).alias("seq"), "time", F.lit("snapshot").alias("trigger"),
                F.lit("snapshot").alias("op"), F.lit(None).cast("string").alias("path"))
    )
    every = own.unionByName(brokers).unionByName(topics).unionByName(first)
    first_change = F.min(F.struct("seq", "trigger", "op", "path"))
    return every.groupBy("group_id", "zxid").agg(F.min("time").alias("started_at"), first_change.alias("_t")).select(
        "group_id", F.col("zxid").alias("state_zxid"), "started_at", F.col("_t.trigger").alias("trigger"),
        F.col("_t.op").alias("trigger_op"), F.col("_t.path").alias("trigger_path"),
    )


def _fold(name: str, *parts: str) -> Column:
    return F.concat_ws(SEP, F.col(name), *[F.col(p).cast("string") for p in parts])


def expected_states(states: DataFrame, registrations: DataFrame, topics: DataFrame,
                    assignors: dict[str, str]) -> DataFrame:
    """``group_id, state_zxid, topic, partition, broker_id, expected_owner, assignor``: the
    expected assignment of every state, by the build's assignors."""
    regs = registrations.join(states.select("group_id", "state_zxid"), "group_id").where(_live_at(F.col("state_zxid")))
    regs = regs.select(
        _fold("group_id", "state_zxid").alias("group_id"), "consumer_id",
        _fold("topic", "group_id", "state_zxid").alias("topic"), "streams", F.col("topic").alias("_topic"),
        "state_zxid",
    )
    wanted = regs.select(F.col("_topic").alias("topic"), "state_zxid", F.col("topic").alias("_key")).distinct()
    parts = topics.join(wanted, "topic").where(_live_at(F.col("state_zxid")))
    parts = parts.select(F.col("_key").alias("_key"), "topic", "partition", "broker_id")
    threads = reused(assignment_zk.consumer_threads(regs.drop("_topic", "state_zxid")))
    ranged = assignment_zk.is_range_group(assignors, "_group")
    threads = threads.withColumn("_group", F.substring_index("group_id", SEP, 1))
    keyed = parts.select(F.col("_key").alias("topic"), "partition", "broker_id")
    plan, ranks = assignment_zk.range_inputs(threads.where(ranged).drop("_group"), keyed)
    by_range = assignment_zk.expected_range(plan, ranks)
    # round-robin orders partitions by the hash of the real topic name: order first, then fold
    ordered = assignment_zk.roundrobin_order(parts.select("topic", "partition", "broker_id", "_key"))
    ordered = ordered.select(F.col("_key").alias("topic"), "partition", "broker_id", "part_order")
    rr = threads.where(~ranged).drop("_group")
    members = rr.select("group_id", "owner").distinct().withColumn("member_order", F.col("owner"))
    by_rr = roundrobin_assign(members, rr.select("group_id", "owner", "topic").distinct(), ordered).select(
        "group_id", "topic", "partition", "broker_id", "expected_owner", F.lit("roundrobin").alias("assignor"),
    )
    out = ["group_id", "topic", "partition", "broker_id", "expected_owner", "assignor"]
    both = by_range.select(*out).unionByName(by_rr)
    return reused(both.select(
        F.substring_index("group_id", SEP, 1).alias("group_id"),
        F.substring_index("group_id", SEP, -1).cast("bigint").alias("state_zxid"),
        F.substring_index("topic", SEP, 1).alias("topic"),
        "partition", "broker_id", "expected_owner", "assignor",
    ))


def settled_states(changes: DataFrame, assignors: dict[str, str], last: int,
                   rule: SettleRule = DEFAULT_RULE) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(``core/rebalance_states``, ``core/settled_audit``, owner intervals) of the run. ``last``:
    the greatest zxid of ``changes``; ``rule``: the settle window and stuck limit."""
    registrations = reused(_parsed(intervals(changes, "consumer_ids"), registry.parse_registrations))
    topics = reused(_parsed_topics(intervals(changes, "broker_topics")))
    owners = reused(_parsed(intervals(changes, "consumer_owners"), registry.parse_owners))
    times = changes.groupBy("zxid").agg(F.min("time").alias("at"))

    by_group = Window.partitionBy("group_id").orderBy("state_zxid")
    states = reused(triggers(changes, registrations).select(
        "*",
        F.lead("state_zxid").over(by_group).alias("next_zxid"),
        F.lead("started_at").over(by_group).alias("next_at"),
    ))
    # broker_id is null for 0.8+ partitions: -1 in the join keys (joins by name are not null-safe)
    expected = expected_states(states, registrations, topics, assignors).withColumn("broker_id", _no_null_broker())
    owners = owners.withColumn("broker_id", _no_null_broker())
    key = ["group_id", "state_zxid", "topic", "partition", "broker_id"]

    # owner intervals overlapping each state, clipped to it (the last state ends after the last
    # zxid); the arithmetic is decimal, as the last zxid may be the greatest bigint
    end = F.coalesce(F.col("next_zxid"), F.lit(last)).cast(_ZXID_SUM) + F.col("next_zxid").isNull().cast("int")
    overlapping = owners.join(states.select("group_id", "state_zxid", "next_zxid"), "group_id").where(
        (F.col("zxid") < end) & (F.col("until_zxid").isNull() | (F.col("until_zxid") > F.col("state_zxid")))
    )
    reaches_end = F.col("until_zxid").isNull() | (
        F.col("next_zxid").isNotNull() & (F.col("until_zxid") >= F.col("next_zxid"))
    )
    final = overlapping.where(reaches_end).select(*key, "owner", F.col("zxid").alias("owner_since"))
    clipped = F.least(F.coalesce("until_zxid", F.lit(NO_END)).cast(_ZXID_SUM), end) - F.greatest("zxid", "state_zxid")
    cover = overlapping.groupBy(*key).agg(F.sum(clipped).alias("_covered"))
    inner_ends = overlapping.where(~reaches_end).groupBy(*key).agg(F.max("until_zxid").alias("_last_release"))
    keys = expected.select(*key).unionByName(final.select(*key)).unionByName(inner_ends.select(*key)).distinct()

    audit = (
        keys.join(expected, key, "left")
        .join(final, key, "left")
        .join(states.select("group_id", "state_zxid", "next_zxid"), ["group_id", "state_zxid"])
        .join(cover, key, "left")
        .join(inner_ends, key, "left")
    )
    status = (
        F.when(F.col("expected_owner").isNull() & F.col("owner").isNull(), "ok")  # released inside the state
        .when(F.col("expected_owner").isNull(), "unexpected_partition")
        .when(F.col("owner").isNull() & F.col("expected_owner").isNotNull(), "unowned")
        .when(F.col("owner") != F.col("expected_owner"), "wrong_owner")
        .otherwise("ok")
    )
    span = end - F.col("state_zxid")
    audit = reused(audit.select(
        "group_id", "state_zxid", "topic", "partition", F.nullif(F.col("broker_id"), F.lit(-1)).alias("broker_id"),
        "expected_owner", F.col("owner").alias("observed_owner"), status.alias("status"), "owner_since",
        "_last_release", "assignor",
        (F.col("expected_owner").isNotNull() & (F.coalesce("_covered", F.lit(0)) < span)).alias("had_no_owner"),
    ))

    settle = audit.groupBy("group_id", "state_zxid").agg(
        F.sum((F.col("expected_owner").isNotNull()).cast("int")).alias("expected_partitions"),
        F.sum(F.col("had_no_owner").cast("int")).alias("unowned_partitions"),
        F.sum((F.col("status") == "wrong_owner").cast("int")).alias("wrong_owner_partitions"),
        F.sum((F.col("status") == "unowned").cast("int")).alias("unowned_at_end"),
        F.sum((F.col("status") == "unexpected_partition").cast("int")).alias("unexpected_partitions"),
        F.max(F.greatest(F.col("owner_since"), F.col("_last_release"))).alias("_settle"),
        F.first("assignor", ignorenulls=True).alias("assignor"),
    )
    # settled: every expected partition owned at the end, and the owners the state ended with
    # unchanged for the settle window (to the next trigger, or to the end of the history)
    end_at = changes.agg(F.max("time").alias("_end_at"))
    changed = times.select(F.col("zxid").alias("_changed_zxid"), F.col("at").alias("_changed_at"))
    quiet = millis(F.coalesce("next_at", "_end_at")) - millis(F.col("_changed_at"))
    timed = (
        states.join(settle, ["group_id", "state_zxid"], "left")
        .withColumn("_changed_zxid", F.greatest(F.coalesce("_settle", "state_zxid"), "state_zxid"))
        .join(changed, "_changed_zxid", "left")
        .crossJoin(F.broadcast(end_at))
        .withColumn("settled", F.coalesce((F.coalesce("unowned_at_end", F.lit(0)) == 0) & (quiet >= rule.window_ms),
                                          F.lit(False)))
        .withColumns({"settled_zxid": F.when(F.col("settled"), F.col("_changed_zxid")),
                      "settled_at": F.when(F.col("settled"), F.col("_changed_at"))})
    )
    runs = rebalance_runs(timed, ["group_id"], ["state_zxid"], rule, F.coalesce("next_at", "_end_at"),
                          F.col("trigger") == "snapshot")
    rebalance_states = reused(runs.select(
        F.lit(assignment_zk.SOURCE).alias("source"), "group_id", "state_zxid", "started_at", "trigger",
        "trigger_op", "trigger_path", "next_zxid", "next_at", "settled", "settled_zxid", "settled_at",
        F.coalesce("expected_partitions", F.lit(0)).alias("expected_partitions"),
        F.coalesce("unowned_partitions", F.lit(0)).alias("unowned_partitions"),
        F.lit(0).alias("double_claimed_partitions"),
        F.coalesce("wrong_owner_partitions", F.lit(0)).alias("wrong_owner_partitions"),
        F.coalesce("unowned_at_end", F.lit(0)).alias("unowned_at_end"),
        F.coalesce("unexpected_partitions", F.lit(0)).alias("unexpected_partitions"),
        "assignor", "rebalance_started_at", "stuck", "settle_window_ms", "stuck_limit_ms",
    ))
    held_from = times.select(F.col("zxid").alias("owner_since"), F.col("at").alias("held_from"))
    settled_audit = audit.join(
        rebalance_states.select("group_id", "state_zxid", "next_zxid", "next_at", "settled"), ["group_id", "state_zxid"]
    ).join(held_from, "owner_since", "left").select(
        F.lit(assignment_zk.SOURCE).alias("source"), *key, "expected_owner", "observed_owner", "status",
        "owner_since", "held_from", F.col("next_zxid").alias("held_until_zxid"), F.col("next_at").alias("held_until"),
        "settled",
    )
    return rebalance_states, settled_audit, states


def build(spark, ctx: RunContext, assignors: dict[str, str],
          rule: SettleRule = DEFAULT_RULE) -> tuple[DataFrame, DataFrame]:
    """(``core/rebalance_states``, ``core/settled_audit``) of the run; empty without history."""
    if not row_count(ctx.warehouse, "raw/znode_changes", ctx.run_id):
        return tuple(empty(spark, t) for t in ("core/rebalance_states", "core/settled_audit"))
    changes = read_spark(spark, ctx.warehouse, "raw/znode_changes", ctx.run_id)
    last = max(row_group_bounds(ctx.warehouse, "raw/znode_changes", ctx.run_id, "zxid"), default=0)
    states, audit, _ = settled_states(changes, assignors, last, rule)
    return states, audit
