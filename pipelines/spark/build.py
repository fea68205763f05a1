"""``kaudit build``'s Spark part: every ``core/*`` table of one run, in one transaction.

Order and cost (the owners, offsets and expected rows are as many as the cluster has
partitions times groups; everything else is small). Five chains of jobs run side by side
(:mod:`pipelines.spark.concurrent`), so the long scans fill the cores the short jobs leave:

1. scans: ``core/partition_owners`` and ``core/zk_offsets``, each parsed straight from
   ``raw/znodes`` (one scan each).
2. history, two chains: every state of the ZooKeeper groups the txn logs replayed,
   from the start (it needs nothing else the build writes); every generation (epoch) of the
   Kafka groups, once the main chain has the topic partitions and the KIP-848 state (a small
   run's rows computed there, a big run's planned). The main chain writes both eras'
   ``core/rebalance_states`` and ``core/settled_audit`` last, one write each. The classic
   groups' expected rows and audit of their latest generation are those of the main tables:
   computed once, for both.
3. main: the small registry tables from the small remainder of the znodes (cached by the
   first of them); then the range plan and ranks of the ZooKeeper groups.
4. expected: ``core/expected_assignment`` from the plan (a dense topic's partitions generated
   from its count, a sparse topic's joined from its broadcast ranks); round-robin ZooKeeper
   groups and KIP-848 groups (their server's target; ``core/consumer_group_findings`` written
   on the main chain) by their general functions; the classic Kafka groups' from the history
   chain (2).
5. main, once the owners are written: the audit, ZooKeeper range groups by lookup
   (``audit.range_audit``), the classic Kafka groups' from the history chain, the rest with
   the general full outer join (``audit.audit``); the unowned partitions of range groups are
   looked for only when fewer observed rows matched an expected key (counted in the footers
   of the lookup's files) than there are expected rows.

Frames that two writes (or two branches of one plan) read are computed once
(``io.reused``). A small run's plans move no rows between partitions (kaudit's session
extension, ``OnePartition.java``).

A parser counts its malformed rows while its table is written; only when there are some is
the parse repeated to collect them for ``raw/quarantine`` (``part-build_core.parquet``).
Nothing is visible until the transaction publishes all tables together; a failure in any
chain cancels the others' jobs and rolls the transaction back.
"""

from __future__ import annotations

import functools

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.context import RunContext
from pipelines.settle import DEFAULT_RULE, SettleRule
from pipelines.spark import (
    assignment_kip848,
    assignment_zk,
    generations,
    kraft_registry,
    migration,
    mm2,
    rebalances,
    registry,
    share_groups,
    streams_groups,
)
from pipelines.spark.audit import audit, range_audit, unowned
from pipelines.spark.concurrent import Concurrent
from pipelines.spark.io import (
    conform,
    observe,
    read_spark,
    read_staged,
    reused,
    row_group_bounds,
    staged_non_null,
    staged_rows,
    write_staged,
)
from pipelines.spark.schemas import empty
from pipelines.spark.session import one_partition
from pipelines.warehouse import quarantine
from pipelines.warehouse.reading import row_count
from pipelines.warehouse.tables import CORE, RAW_QUARANTINE, ZOOKEEPER_STATE_COLUMNS

STEP = "build_core"


def _znodes(spark: SparkSession, ctx: RunContext) -> DataFrame:
    """The run's znodes of the source the registry uses (see ``registry.pick_source``)."""
    sources = row_group_bounds(ctx.warehouse, "raw/znodes", ctx.run_id, "source")
    znodes = read_spark(spark, ctx.warehouse, "raw/znodes", ctx.run_id)
    return registry.select_source(znodes, registry.pick_source(sources)).select("path", "data", "mtime")


def _write_parsed(tx, parsers: dict, znodes: DataFrame, advance) -> list[DataFrame]:
    """Writes each parser's good rows; returns the quarantine frames of those that had bad
    ones (counted while the table is written, collected by a second pass only then)."""
    bad = []
    for table, parse in parsers.items():
        parsed, counted = observe(parse(znodes), bad=F.sum(F.col("reason").isNotNull().cast("int")))
        write_staged(tx, table, registry.good(parsed))
        if counted.get["bad"]:
            bad.append(registry.quarantine(parse(znodes)))
        advance()
    return bad


def _small_registry(tx, znodes: DataFrame, advance, replaced=()) -> list[DataFrame]:
    """Writes the small registry tables from the small remainder of ``znodes`` (cached by the
    first of them), but for those ``replaced`` (a KRaft run's); returns their quarantine frames."""
    small = znodes.where(registry.is_small()).transform(registry.with_path_parts)
    small.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        parsers = {t: p for t, p in registry.SMALL_PARSERS.items() if t not in replaced}
        return _write_parsed(tx, parsers, small, advance)
    finally:
        small.unpersist()


def _write_expected(tx, frames: list[DataFrame], kafka_era, advance) -> int:
    """Writes ``core/expected_assignment`` (with the classic Kafka groups' rows of ``kafka_era``,
    the chain of :func:`_kafka_era_states`); returns the rows of the first frame (range groups)."""
    classic = kafka_era.result()[1]
    counting, counted = observe(frames[0], rows=F.count(F.lit(1)))
    more = frames[1:] + ([] if classic is None else [classic.expected])
    write_staged(tx, "core/expected_assignment", _union([counting] + more))
    advance()
    return counted.get["rows"]


def _kip848_groups(spark: SparkSession, ctx: RunContext, topic_parts: DataFrame) -> tuple[dict, DataFrame, tuple]:
    """Expected rows and audit inputs of the KIP-848 groups, their findings, and their raw
    frames and state (for their epochs, :func:`generations.build`)."""
    raw = {t: read_spark(spark, ctx.warehouse, t, ctx.run_id) for t in assignment_kip848.RAW_TABLES}
    st = assignment_kip848.state(raw, topic_parts)
    inputs = {"expected": reused(assignment_kip848.expected_assignment(st)), **assignment_kip848.audit_inputs(st)}
    return inputs, assignment_kip848.findings(st), (raw, st)


def _zookeeper_roundrobin_groups(threads: DataFrame, topic_parts: DataFrame) -> dict[str, DataFrame]:
    """Expected rows and audit inputs of the ZooKeeper groups configured for round-robin; the
    build adds ``observed`` (their owners) once ``core/partition_owners`` is written."""
    src = F.lit(assignment_zk.SOURCE).alias("source")
    return {
        "expected": assignment_zk.expected_roundrobin(threads, topic_parts),
        "registered": threads.select(src, "group_id", "owner"),
        "subscribed": threads.select(src, "group_id", "topic"),
        "known": topic_parts.select(src, "topic", "partition", "broker_id"),
    }


def _early(frame: DataFrame) -> DataFrame:
    """A small run's ``frame`` computed now, on the chain that asks; a big run's is left to the
    write (its rows, held until then, would fill the executors' memory)."""
    return reused(frame, eager=True) if one_partition(frame.sparkSession) else frame


def _zookeeper_states(spark: SparkSession, ctx: RunContext, assignors: dict[str, str],
                      rule: SettleRule) -> list[DataFrame]:
    """(``core/rebalance_states``, ``core/settled_audit``) of every state of the
    ZooKeeper groups the txn logs replayed (they need nothing else the build writes)."""
    return [_early(frame) for frame in rebalances.build(spark, ctx, assignors, rule)]


def _kafka_era_states(spark: SparkSession, ctx: RunContext, topic_parts: DataFrame, kip848_state: tuple | None,
                      rule: SettleRule) -> tuple[list[list[DataFrame]], generations.Classic | None]:
    """The same two tables' rows of every generation (epoch) of the Kafka groups, and the
    classic groups' frames, the latest generation's expected and audit rows among them
    (:func:`generations.build`)."""
    pairs, classic = generations.build(spark, ctx, topic_parts, kip848_state, rule)
    return [[_early(frame) for frame in pair] for pair in pairs], classic


def _write_history(tx, zookeeper: list[DataFrame], kafka_era: list[list[DataFrame]], advance) -> None:
    """``core/rebalance_states`` and ``core/settled_audit``, each in one write of both eras."""
    for i, table in enumerate(("core/rebalance_states", "core/settled_audit")):
        frames = [conform(zookeeper[i], table), *[conform(p[i], table, ZOOKEEPER_STATE_COLUMNS) for p in kafka_era]]
        write_staged(tx, table, _union(frames))
    advance()


# The raw tables whose rows drive each group module's tables: a run without any has none of
# their rows, so the build writes them empty without planning the module's frames (planning the
# share and streams groups' frames over empty inputs cost several seconds of Spark's analyzer).
SHARE_INPUTS = ("raw/group_coordinator_records", "raw/share_partition_states")
STREAMS_INPUTS = ("raw/group_coordinator_records",)


def _driven(spark: SparkSession, ctx: RunContext, module, inputs: tuple[str, ...],
            topic_parts: DataFrame) -> dict[str, DataFrame]:
    """``module.core_frames`` when the run has rows in one of ``inputs``, else its tables empty."""
    if any(row_count(ctx.warehouse, t, ctx.run_id) for t in inputs):
        return module.core_frames(spark, ctx, topic_parts)
    return {t: empty(spark, t) for t in module_tables(module)}


def module_tables(module) -> tuple[str, ...]:
    """The ``core/*`` tables ``module.core_frames`` returns (``CORE``'s tables of its prefix)."""
    prefix = {share_groups: "core/share_", streams_groups: "core/streams_"}[module]
    return tuple(t for t in CORE if t.startswith(prefix))


def _union(frames: list[DataFrame]) -> DataFrame:
    return functools.reduce(DataFrame.unionByName, frames)


def build_core(ctx: RunContext, assignors: dict[str, str], rule: SettleRule = DEFAULT_RULE) -> dict[str, int]:
    """Builds all ``core/*`` tables of ``ctx.run_id``; returns row counts per table. ``rule``:
    the history's settle window and stuck limit (:mod:`pipelines.settle`)."""
    assignment_zk.check_assignors(assignors)
    spark = ctx.spark()
    wh, run_id = ctx.warehouse, ctx.run_id
    with wh.transaction(run_id, step=STEP) as tx, ctx.progress() as progress, Concurrent(spark) as side:
        task = progress.add_task("build core tables", total=len(CORE))
        advance = functools.partial(progress.advance, task)

        # the scans of every znode for owners and offsets run next to everything else
        znodes = _znodes(spark, ctx)
        bulk = {t: side.submit("scan", _write_parsed, tx, {t: p}, znodes, advance)
                for t, p in registry.BULK_PARSERS.items()}
        zookeeper = side.submit("zookeeper-history", _zookeeper_states, spark, ctx, assignors, rule)
        # no ZooKeeper registry: the KRaft replay's tables replace the empty ones
        replacing = kraft_registry.frames(spark, ctx) if kraft_registry.used(ctx) else {}
        bad = _small_registry(tx, znodes, advance, replaced=replacing)
        for table, frame in replacing.items():
            write_staged(tx, table, frame)
            advance()

        # expected rows: ZooKeeper range groups through the small range tables; the other
        # groups (ZooKeeper round-robin, Kafka) in full, when the run has any
        registrations = read_staged(spark, tx, "core/consumer_registrations")
        topic_parts = read_staged(spark, tx, "core/topic_partitions")
        threads = assignment_zk.consumer_threads(registrations).cache()
        ranged = assignment_zk.is_range_group(assignors)
        plan, ranks = (t.cache() for t in assignment_zk.range_inputs(threads.where(ranged), topic_parts))
        expected_range = assignment_zk.expected_range(plan, ranks)
        roundrobin = (
            _zookeeper_roundrobin_groups(threads.where(~ranged), topic_parts)
            if assignment_zk.non_range_groups(assignors) else None
        )
        kip848, findings = None, empty(spark, "core/consumer_group_findings")
        kip848_state = None
        if row_count(wh, "raw/consumer_group_metadata", run_id):
            kip848, findings, kip848_state = _kip848_groups(spark, ctx, topic_parts)
        kafka_era = side.submit("kafka-history", _kafka_era_states, spark, ctx, topic_parts, kip848_state,
                                rule)
        others = [o for o in (roundrobin, kip848) if o is not None]
        expected = side.submit("expected", _write_expected, tx, [expected_range, *[o["expected"] for o in others]],
                               kafka_era, advance)
        write_staged(tx, "core/consumer_group_findings", findings)
        advance()
        group_frames = {**_driven(spark, ctx, share_groups, SHARE_INPUTS, topic_parts),
                        **_driven(spark, ctx, streams_groups, STREAMS_INPUTS, topic_parts),
                        **mm2.core_frames(spark, ctx), **migration.core_frames(spark, ctx)}
        for table, frame in group_frames.items():
            write_staged(tx, table, frame)
            advance()

        # the audit, once the owners are written
        for chain in bulk.values():
            bad += chain.result()
        owners = read_staged(spark, tx, "core/partition_owners").select(
            F.lit(assignment_zk.SOURCE).alias("source"), "group_id", "topic", "partition", "broker_id", "owner"
        )
        if roundrobin is not None:
            roundrobin["observed"] = owners.where(~ranged)
        write_staged(tx, "core/assignment_audit", range_audit(owners.where(ranged), plan, ranks, threads))
        matched = staged_non_null(tx, "core/assignment_audit", "expected_owner")
        classic = kafka_era.result()[1]
        if kip848 is not None and classic is not None:  # the KIP-848 groups' audit knows the classic ones' topics
            kip848["known"] = kip848["known"].unionByName(classic.known)
        audited = [audit(**{k: _union([o[k] for o in others]) for k in others[0]})] if others else []
        if classic is not None:
            audited.append(classic.latest_audit)
        if audited:
            write_staged(tx, "core/assignment_audit", _union(audited), append=True)
        if matched < expected.result():
            write_staged(tx, "core/assignment_audit", unowned(expected_range, owners.where(ranged)), append=True)
        advance()
        for frame in (threads, plan, ranks):
            frame.unpersist()

        _write_history(tx, zookeeper.result(), kafka_era.result()[0], advance)

        quarantined = _union(bad).toArrow() if bad else quarantine.table([])
        tx.write("raw/quarantine", quarantined, RAW_QUARANTINE)
        tx.writer("raw/quarantine")  # an empty file replaces an earlier build's rows
        counts = {table: staged_rows(tx, table) for table in CORE}
        counts["raw/quarantine"] = quarantined.num_rows
    ctx.say(
        f"build {run_id}: "
        + ", ".join(f"{t.split('/', 1)[1]} {n}" for t, n in counts.items() if t.startswith("core/"))
        + f"; {counts['raw/quarantine']} znode value(s) quarantined"
    )
    return counts
