"""MirrorMaker 2 failover readiness: per group and replicated partition, where a failover to
the target cluster now would restart the group, against where MirrorMaker's own translation
puts it. Pure DataFrame -> DataFrame functions; :func:`build_mm2` reads the run's clusters and
writes ``core/mm2_failover`` and ``core/mm2_findings``.

The translation is MirrorMaker's (``OffsetSyncStore.translateDownstream``, Kafka 3.5+, after
KAFKA-12468 / KAFKA-15202): of the offset syncs of the source partition, the newest whose
upstream offset is at or below the group's committed upstream offset ``C``; the translated
offset is its downstream offset when ``C`` equals its upstream offset, else its downstream
offset + 1 (past the synced record only: MirrorMaker cannot know how many of the records after
it were replicated). A sync whose upstream offset is below the sync before it (a rewind) makes
every earlier sync of the partition unusable (``updateSyncArray`` clears the store). With no
usable sync at or below ``C`` there is no translation (MirrorMaker emits no checkpoint).

MirrorMaker keeps only some of the syncs (about one per power of two of the distance to the
newest), so its checkpoint may rest on an older sync than the newest one here: such a checkpoint
is ``older_sync``, correct but further back. A checkpoint whose downstream offset no sync at
or below its upstream offset gives, or that is past the recompute, ``disagrees``.

What a failover now does: the group starts on the target at its committed offset there. The
position that re-reads nothing and skips nothing is estimated from the newest sync at or below
``C`` as ``downstream + (C - upstream)`` (exact while the partition is replicated record for
record: no transaction markers or compaction between the sync and ``C``). Restarting below it
re-reads records (duplicates), above it skips them (loss).

Topics are renamed as ``DefaultReplicationPolicy`` does: ``<source alias>.<topic>``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.warehouse.tables import MM2_FINDINGS

TP = ("topic", "partition")


def effective_commits(commits: DataFrame) -> DataFrame:
    """(group_id, topic, partition, committed_offset) of the current offsets of a cluster's
    ``raw/offset_commits``: the last effective commit in log order, none after a tombstone."""
    eff = commits.where(~F.col("is_transactional") | (F.col("txn_state") == "committed"))
    last = F.max(F.struct("offsets_partition", "log_offset", "is_tombstone", "committed_offset"))
    out = eff.groupBy("group_id", *TP).agg(last.alias("c"))
    return out.where(~F.col("c.is_tombstone")).select("group_id", *TP,
                                                      F.col("c.committed_offset").alias("committed_offset"))


def usable_syncs(syncs: DataFrame) -> DataFrame:
    """The offset syncs MirrorMaker can translate with: those after the partition's last
    upstream rewind (topic, partition, upstream_offset, downstream_offset, log_offset)."""
    order = Window.partitionBy(*TP).orderBy("syncs_partition", "log_offset")
    rewind = (F.col("upstream_offset") < F.lag("upstream_offset").over(order)).cast("int")
    epochs = syncs.withColumn("epoch", F.sum(F.coalesce(rewind, F.lit(0))).over(order))
    last = epochs.withColumn("last_epoch", F.max("epoch").over(Window.partitionBy(*TP)))
    return last.where(F.col("epoch") == F.col("last_epoch")).select(
        *TP, "upstream_offset", "downstream_offset", "syncs_partition", "log_offset")


def translate(positions: DataFrame, at: str, syncs: DataFrame, prefix: str) -> DataFrame:
    """``positions`` with ``<prefix>_sync_upstream``, ``<prefix>_sync_downstream`` (the newest
    usable sync at or below column ``at``) and ``<prefix>_translated`` (MirrorMaker's
    translation of ``at``); null where no sync is at or below it."""
    s = syncs.select(*[F.col(c).alias(f"s_{c}") for c in syncs.columns])
    cond = (F.col("topic") == F.col("s_topic")) & (F.col("partition") == F.col("s_partition")) & \
        (F.col("s_upstream_offset") <= F.col(at))
    keys = positions.columns
    newest = F.max(F.struct("s_syncs_partition", "s_log_offset", "s_upstream_offset", "s_downstream_offset"))
    found = positions.join(s, cond, "left").groupBy(*keys).agg(newest.alias("n"))
    up, down = F.col("n.s_upstream_offset"), F.col("n.s_downstream_offset")
    return found.select(
        *keys,
        up.alias(f"{prefix}_sync_upstream"),
        down.alias(f"{prefix}_sync_downstream"),
        (down + F.when(F.col(at) == up, 0).otherwise(1)).alias(f"{prefix}_translated"),
    )


def explained(checkpoints: DataFrame, syncs: DataFrame) -> DataFrame:
    """``checkpoints`` (keyed by group_id, topic, partition) with ``explained``: some sync of
    the partition at or below the checkpoint's upstream offset translates it to its downstream
    offset (the sync MirrorMaker's sparse store may have used)."""
    s = syncs.select(F.col("topic").alias("s_topic"), F.col("partition").alias("s_partition"),
                     F.col("upstream_offset").alias("s_up"), F.col("downstream_offset").alias("s_down"))
    cond = (F.col("source_topic") == F.col("s_topic")) & (F.col("partition") == F.col("s_partition")) & \
        (F.col("s_up") <= F.col("checkpoint_upstream_offset"))
    hit = F.col("s_down") + F.when(F.col("checkpoint_upstream_offset") == F.col("s_up"), 0).otherwise(1) \
        == F.col("checkpoint_downstream_offset")
    keys = checkpoints.columns
    return checkpoints.join(s, cond, "left").groupBy(*keys).agg(
        F.coalesce(F.max(hit.cast("int")), F.lit(0)).cast("boolean").alias("explained"))


def latest_checkpoints(checkpoints: DataFrame, source_alias: str) -> DataFrame:
    """The newest checkpoint (log order) of each (group, source topic, partition) of the
    checkpoints of ``source_alias``; their topic renamed back to the source's."""
    cp = checkpoints.where((F.col("source_alias") == source_alias) & F.col("upstream_offset").isNotNull())
    last = F.max(F.struct("checkpoints_partition", "log_offset", "upstream_offset", "downstream_offset"))
    prefix = f"{source_alias}."
    return (cp.groupBy("group_id", "topic", "partition").agg(last.alias("c"))
            .where(F.col("topic").startswith(prefix))
            .select("group_id", F.expr(f"substring(topic, {len(prefix) + 1})").alias("source_topic"),
                    F.col("topic").alias("target_topic"), "partition",
                    F.col("c.upstream_offset").alias("checkpoint_upstream_offset"),
                    F.col("c.downstream_offset").alias("checkpoint_downstream_offset")))


def failover(source_commits: DataFrame, target_commits: DataFrame, syncs: DataFrame, checkpoints: DataFrame,
             source_alias: str, target_alias: str) -> DataFrame:
    """``core/mm2_failover``: one row per group and partition of a source topic MirrorMaker
    replicates (offset syncs of ``target_alias`` exist for the topic) that the group committed on
    the source, or that a checkpoint names. A partition with no sync has no translation."""
    mine = syncs.where(F.col("target_alias") == target_alias)
    usable = usable_syncs(mine)
    replicated = mine.select("topic").distinct()
    src = effective_commits(source_commits).join(replicated, ["topic"], "left_semi") \
        .withColumnRenamed("committed_offset", "source_committed_offset")
    cps = latest_checkpoints(checkpoints, source_alias)
    cps_t = translate(cps.withColumnRenamed("source_topic", "topic"), "checkpoint_upstream_offset", usable, "cp")
    cps_x = explained(cps, mine).withColumnRenamed("source_topic", "topic")
    cps_all = cps_t.join(cps_x.select("group_id", "topic", "partition", "explained"),
                         ["group_id", "topic", "partition"], "left")
    keyed = src.join(cps_all, ["group_id", *TP], "full")
    pos = translate(keyed.select("group_id", *TP, "source_committed_offset").where(
        F.col("source_committed_offset").isNotNull()), "source_committed_offset", usable, "src")
    tgt = effective_commits(target_commits).select(
        "group_id", F.col("topic").alias("target_topic"), "partition",
        F.col("committed_offset").alias("target_committed_offset"))
    rows = (keyed.join(pos.drop("source_committed_offset"), ["group_id", *TP], "left")
            .withColumn("target_topic", F.coalesce("target_topic", F.concat(F.lit(f"{source_alias}."), "topic")))
            .join(tgt, ["group_id", "target_topic", "partition"], "left"))
    c, su, sd = F.col("source_committed_offset"), F.col("src_sync_upstream"), F.col("src_sync_downstream")
    ideal = sd + (c - su)
    restart = F.col("target_committed_offset")
    cp_down = F.col("checkpoint_downstream_offset")
    status = (F.when(F.col("checkpoint_upstream_offset").isNull(), None)
              .when(cp_down == F.col("cp_translated"), "exact")
              .when(F.col("cp_translated").isNotNull() & (cp_down > F.col("cp_translated")), "disagrees")
              .when(F.col("explained"), "older_sync")
              .otherwise("disagrees"))
    return rows.select(
        F.lit(source_alias).alias("source_alias"), F.lit(target_alias).alias("target_alias"),
        "group_id", "topic", "partition", "target_topic",
        c.alias("source_committed_offset"),
        su.alias("sync_upstream_offset"), sd.alias("sync_downstream_offset"),
        F.col("src_translated").alias("translated_offset"),
        ideal.alias("expected_target_offset"),
        "checkpoint_upstream_offset", "checkpoint_downstream_offset",
        F.col("cp_translated").alias("checkpoint_recomputed_offset"),
        status.alias("checkpoint_status"),
        "target_committed_offset",
        F.when(restart < ideal, ideal - restart).when(restart.isNotNull() & ideal.isNotNull(), 0)
        .alias("records_reread"),
        F.when(restart > ideal, restart - ideal).when(restart.isNotNull() & ideal.isNotNull(), 0)
        .alias("records_skipped"),
    )


def findings(rows: DataFrame) -> DataFrame:
    """``core/mm2_findings`` of ``core/mm2_failover`` rows (names: ``MM2_FINDINGS``)."""
    cases = {
        "checkpoint_disagrees": (F.col("checkpoint_status") == "disagrees",
                                 F.format_string("checkpoint %d -> %d, recomputed %s",
                                                 "checkpoint_upstream_offset", "checkpoint_downstream_offset",
                                                 F.coalesce(F.col("checkpoint_recomputed_offset").cast("string"),
                                                            F.lit("none")))),
        "target_ahead_of_translation": (F.col("target_committed_offset") > F.col("translated_offset"),
                                        F.format_string("target %d, translated %d: %d records skipped on failover",
                                                        "target_committed_offset", "translated_offset",
                                                        F.coalesce("records_skipped", F.lit(0)))),
        "never_checkpointed": (F.col("source_committed_offset").isNotNull()
                               & F.col("checkpoint_upstream_offset").isNull(),
                               F.format_string("committed %d on %s, no checkpoint", "source_committed_offset",
                                               "source_alias")),
    }
    assert tuple(cases) == MM2_FINDINGS
    frames = [rows.where(cond).select("source_alias", "target_alias", "group_id", "topic", "partition",
                                      F.lit(name).alias("finding"), detail.alias("detail"))
              for name, (cond, detail) in cases.items()]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


# --- the run's clusters -------------------------------------------------------------------------

SYNCS, CHECKPOINTS, COMMITS = "raw/mm2_offset_syncs", "raw/mm2_checkpoints", "raw/offset_commits"


def pairs(ctx) -> list[tuple[str, str]]:
    """The (source alias, target alias) pairs MirrorMaker replicates in the run: a checkpoint
    topic read in cluster T names its source S; an offset-sync topic read in cluster S (their
    default place) names its target T."""
    from pipelines.clusters import aliases, cluster_warehouse
    from pipelines.warehouse.reading import read_arrow
    from pipelines.warehouse.runs import RUN_ID

    found = set()
    for alias in aliases(ctx.warehouse, ctx.run_id, CHECKPOINTS):
        t = read_arrow(cluster_warehouse(ctx.warehouse, alias), CHECKPOINTS, ctx.run_id, columns=["source_alias"])
        found |= {(s, alias) for s in set(t.column("source_alias").to_pylist())}
    for alias in aliases(ctx.warehouse, ctx.run_id, SYNCS):
        t = read_arrow(cluster_warehouse(ctx.warehouse, alias), SYNCS, ctx.run_id, columns=["target_alias"])
        found |= {(alias, target) for target in set(t.column("target_alias").to_pylist())}
    # a record whose alias is null or no cluster alias (the contract allows any string) names no
    # cluster of the run to pair
    unnamed = {p for p in found if not all(isinstance(a, str) and RUN_ID.match(a) for a in p)}
    if unnamed:
        ctx.say(f"MirrorMaker 2 records of {len(unnamed)} pair(s) name no cluster alias: not audited")
    return sorted(found - unnamed)


def core_frames(spark, ctx) -> dict[str, DataFrame]:
    """``core/mm2_failover`` and ``core/mm2_findings`` of every replication pair of the run (no
    rows when it holds no MirrorMaker records). The offset syncs of a pair are read from every
    cluster of the run (they live in the source by default, in the target with
    ``offset-syncs.topic.location=target``); the commits from the source's and the target's
    ``raw/offset_commits``."""
    from pipelines.clusters import aliases, cluster_warehouse
    from pipelines.kafka.mm2_extract import in_run
    from pipelines.spark.io import read_spark, reused
    from pipelines.spark.schemas import empty

    def table(alias: str, name: str) -> DataFrame:
        return read_spark(spark, cluster_warehouse(ctx.warehouse, alias), name, ctx.run_id, with_run_id=False)

    def union(name: str) -> DataFrame:
        frames = [table(a, name) for a in aliases(ctx.warehouse, ctx.run_id, name)]
        out = empty(spark, name)
        for f in frames:
            out = out.unionByName(f)
        return out

    rows = empty(spark, "core/mm2_failover")
    if in_run(ctx):
        syncs, checkpoints = union(SYNCS), union(CHECKPOINTS)
        for source, target in pairs(ctx):
            rows = rows.unionByName(failover(table(source, COMMITS), table(target, COMMITS), syncs, checkpoints,
                                             source, target))
        rows = reused(rows)  # computed once for both tables
    return {"core/mm2_failover": rows, "core/mm2_findings": findings(rows)}
