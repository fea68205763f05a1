"""The ZooKeeper-to-KRaft migration audit (KIP-866): from a run holding the ZooKeeper data dir of
the old cluster (``raw/znodes``, ``raw/znode_changes``) and the KRaft metadata log of the
migrated one (``raw/kraft_*``, ``raw/metadata_records``), with the brokers' ``__consumer_offsets``
(``raw/offset_commits``):

- ``core/migration_states``: every ZkMigrationStateRecord of the metadata log, its offset, time
  and state (Kafka 3.5+ ids: 0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION;
  ``metadata/.../ZkMigrationState.java``);
- ``core/migration_audit``: what ZooKeeper held against what KRaft holds: the cluster id
  (``/cluster/id``), every topic's id (``/brokers/topics/<t>``'s ``topic_id``), every
  partition's replicas (its partition map) and ISR (``.../partitions/<p>/state``), every topic
  config (``/config/topics/<t>``), every broker's endpoints (``/brokers/ids/<id>``, the last
  registration the ZooKeeper history holds: a broker's znode is ephemeral and goes when it
  moves to KRaft). ``status``: match, differs, only_zookeeper (lost in the migration),
  only_kraft (created after it); a finding (``is_finding``) is a topic, a partition, a config or
  the cluster id that differs or was lost; ISRs and brokers may change with the cluster's life
  and are compared for the record only;
- ``core/migration_offsets``: every group's committed offset per partition before the migration
  (the latest effective commit at or before, in its ``__consumer_offsets`` partition, the last
  commit stamped before the first ZkMigrationStateRecord) and now: ``lost`` (none now),
  ``moved_backwards``, ``advanced``, ``unchanged``, ``new``; lost and moved_backwards are findings.

A run without ZkMigrationStateRecords has no rows in any of them. Pure DataFrame functions.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.spark import registry

STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION"}
AUDIT_FINDING_KINDS = ("cluster_id", "topic_id", "replicas", "config")


def _name(ids: dict[int, str], col: Column) -> Column:
    out = F.concat(F.lit("state "), col.cast("string"))
    for k, v in ids.items():
        out = F.when(col == k, F.lit(v)).otherwise(out)
    return out


def migration_states(records: DataFrame) -> DataFrame:
    """``core/migration_states`` of ``raw/metadata_records``."""
    state = F.get_json_object("record", "$.zkMigrationState").cast("byte")
    return (
        records.where((F.col("record_type") == "ZkMigrationStateRecord") & F.col("txn_state").isNull())
        .select("source", "offset", F.col("timestamp").alias("at"), state.alias("state_id"))
        .withColumn("state", _name(STATES, F.col("state_id")))
    )


def _compare(zk: DataFrame, kraft: DataFrame, kind: str) -> DataFrame:
    """Rows of ``kind`` keyed by (topic, partition, name), ``value`` from each side."""
    key = ["topic", "partition", "name"]
    z = zk.select(*[F.col(k).alias(f"_z_{k}") for k in key], F.col("value").alias("zookeeper"), F.lit(True).alias("_z"))
    k = kraft.select(*[F.col(c).alias(f"_k_{c}") for c in key], F.col("value").alias("kraft"), F.lit(True).alias("_k"))
    on = [F.col(f"_z_{c}").eqNullSafe(F.col(f"_k_{c}")) for c in key]  # null: no partition, no name
    both = z.join(k, on, "full")
    status = (F.when(F.col("_z").isNull(), "only_kraft").when(F.col("_k").isNull(), "only_zookeeper")
              .when(F.col("zookeeper").eqNullSafe(F.col("kraft")), "match").otherwise("differs"))
    return both.select(F.lit(kind).alias("kind"), *[F.coalesce(f"_z_{c}", f"_k_{c}").alias(c) for c in key],
                       "zookeeper", "kraft", status.alias("status"))


def _ints(col: Column) -> Column:
    return F.array_join(F.array_sort(col), ",")


def _endpoint(text: Column) -> Column:
    """``host:port`` of a listener endpoint (``NAME://host:port``)."""
    return F.regexp_extract(text, r"://(.*)$", 1)


def migration_audit(znodes: DataFrame, history: DataFrame, topics: DataFrame, partitions: DataFrame,
                    configs: DataFrame, brokers: DataFrame, cluster: DataFrame) -> DataFrame:
    """``core/migration_audit``: ``znodes`` (one source of ``raw/znodes``), ``history``
    (``raw/znode_changes``), the ``raw/kraft_*`` tables."""
    z = registry.with_path_parts(znodes)
    none = F.lit(None)
    parts = registry.good(registry.parse_topics(z)).where(F.col("replicas").isNotNull())
    live_topics = topics.where(F.col("deleted_offset").isNull())
    kparts = partitions.join(live_topics.select("topic_id"), ["topic_id"])

    ids = _compare(
        z.where((F.col("depth") == 3) & F.col("path").startswith("/brokers/topics/"))
        .select(F.get(F.col("seg"), 3).alias("topic"), none.cast("int").alias("partition"),
                none.cast("string").alias("name"), F.get_json_object("text", "$.topic_id").alias("value")),
        live_topics.select("topic", none.cast("int").alias("partition"), none.cast("string").alias("name"),
                           F.col("topic_id").alias("value")),
        "topic_id",
    )
    replicas = _compare(
        parts.select("topic", "partition", none.cast("string").alias("name"), _ints("replicas").alias("value")),
        kparts.select("topic", "partition", none.cast("string").alias("name"), _ints("replicas").alias("value")),
        "replicas",
    )
    isr = _compare(
        parts.where(F.col("isr").isNotNull())
        .select("topic", "partition", none.cast("string").alias("name"), _ints("isr").alias("value")),
        kparts.select("topic", "partition", none.cast("string").alias("name"), _ints("isr").alias("value")),
        "isr",
    )
    zk_cfg = (
        z.where((F.col("depth") == 3) & F.col("path").startswith("/config/topics/"))
        .select(F.get(F.col("seg"), 3).alias("topic"),
                F.explode(F.from_json("text", "struct<config: map<string, string>>")["config"]))
        .select("topic", none.cast("int").alias("partition"), F.col("key").alias("name"), "value")
    )
    k_cfg = configs.where(F.lower("resource_type") == "topic").select(
        F.col("resource_name").alias("topic"), none.cast("int").alias("partition"), "name", "value")
    config = _compare(zk_cfg, k_cfg, "config")

    last = Window.partitionBy("path").orderBy(F.desc("zxid"), F.desc("seq"))
    zk_brokers = (
        history.where((F.col("kind") == "broker_ids") & F.col("value").isNotNull())
        .withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
        .select(F.element_at(F.split("path", "/"), -1).alias("name"),
                F.from_json(F.col("value").cast("string"), "struct<endpoints: array<string>>")["endpoints"]
                .alias("_e"))
        .select(none.cast("string").alias("topic"), none.cast("int").alias("partition"), "name",
                F.array_join(F.array_sort(F.transform("_e", _endpoint)), ",").alias("value"))
    )
    k_brokers = brokers.select(
        none.cast("string").alias("topic"), none.cast("int").alias("partition"),
        F.col("broker_id").cast("string").alias("name"),
        F.array_join(F.array_sort(F.transform("endpoints", _endpoint)), ",").alias("value"))
    broker = _compare(zk_brokers, k_brokers, "broker")

    cluster_id = _compare(
        z.where(F.col("path") == "/cluster/id").select(
            none.cast("string").alias("topic"), none.cast("int").alias("partition"), none.cast("string").alias("name"),
            F.get_json_object("text", "$.id").alias("value")),
        cluster.select(none.cast("string").alias("topic"), none.cast("int").alias("partition"),
                       none.cast("string").alias("name"), F.col("cluster_id").alias("value")),
        "cluster_id",
    )
    out = cluster_id.unionByName(ids).unionByName(replicas).unionByName(isr).unionByName(config).unionByName(broker)
    finding = F.col("kind").isin(*AUDIT_FINDING_KINDS) & F.col("status").isin("differs", "only_zookeeper")
    return out.withColumn("is_finding", finding)


def migration_offsets(commits: DataFrame, states: DataFrame) -> DataFrame:
    """``core/migration_offsets``: ``raw/offset_commits`` before the migration's first
    ZkMigrationStateRecord and now."""
    started = states.agg(F.min("at").alias("_started"))
    effective = commits.where(~F.coalesce(F.col("txn_state").isin("aborted", "pending"), F.lit(False)))
    # the cut of each __consumer_offsets partition: its last commit stamped before the migration
    cut = (effective.crossJoin(started).where(F.col("commit_timestamp") < F.col("_started"))
           .groupBy("offsets_partition").agg(F.max("log_offset").alias("_cut")))
    key = ["group_id", "topic", "partition"]
    order = Window.partitionBy(*key).orderBy(F.desc("offsets_partition"), F.desc("log_offset"))

    def last(frame: DataFrame, prefix: str) -> DataFrame:
        row = frame.withColumn("_n", F.row_number().over(order)).where(F.col("_n") == 1)
        value = F.when(~F.col("is_tombstone"), F.col("committed_offset"))
        return row.select(*key, value.alias(f"{prefix}_offset"),
                          F.when(~F.col("is_tombstone"), F.col("commit_timestamp")).alias(f"{prefix}_at"))

    before = last(effective.join(cut, ["offsets_partition"]).where(F.col("log_offset") <= F.col("_cut")), "before")
    after = last(effective, "after")
    both = before.join(after, key, "full").where(F.col("before_offset").isNotNull() | F.col("after_offset").isNotNull())
    status = (F.when(F.col("before_offset").isNull(), "new").when(F.col("after_offset").isNull(), "lost")
              .when(F.col("after_offset") < F.col("before_offset"), "moved_backwards")
              .when(F.col("after_offset") > F.col("before_offset"), "advanced").otherwise("unchanged"))
    return both.withColumn("status", status).withColumn("is_finding", F.col("status").isin("lost", "moved_backwards"))


def core_frames(spark, ctx) -> dict[str, DataFrame]:
    """The three tables of the run; no rows when its metadata log holds no ZkMigrationStateRecord."""
    from pipelines.spark.io import read_spark
    from pipelines.spark.schemas import empty
    from pipelines.warehouse.reading import row_count

    def raw(name: str) -> DataFrame:
        return read_spark(spark, ctx.warehouse, name, ctx.run_id, with_run_id=False)

    names = ("core/migration_states", "core/migration_audit", "core/migration_offsets")
    if not row_count(ctx.warehouse, "raw/metadata_records", ctx.run_id):
        return {n: empty(spark, n) for n in names}
    states = migration_states(raw("raw/metadata_records")).cache()
    if states.isEmpty():
        return {n: empty(spark, n) for n in names}
    znodes = raw("raw/znodes")
    source = "live" if not znodes.where(F.col("source") == "live").isEmpty() else "snapshot"
    audit = migration_audit(registry.select_source(znodes, source).select("path", "data", "mtime"),
                            raw("raw/znode_changes"), raw("raw/kraft_topics"), raw("raw/kraft_partitions"),
                            raw("raw/kraft_configs"), raw("raw/kraft_brokers"), raw("raw/kraft_cluster"))
    return {"core/migration_states": states, "core/migration_audit": audit,
            "core/migration_offsets": migration_offsets(raw("raw/offset_commits"), states)}
