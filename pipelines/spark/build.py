"""``kaudit build``'s Spark part: every ``core/*`` table of one run, in one transaction.

Order: the registry tables are parsed from ``raw/znodes`` and staged; the expected
assignment reads them back from staging (Parquet is the cheapest cache) with the Kafka
group tables; the audit reads the staged expected assignment. Registry quarantine rows
(malformed znode values) go to ``raw/quarantine`` as ``part-build_core.parquet``. Nothing
is visible until the transaction publishes all tables together.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.context import RunContext
from pipelines.spark import assignment_kafka, assignment_zk, registry
from pipelines.spark.audit import audit
from pipelines.spark.io import read_raw, read_staged, staged_rows, write_staged
from pipelines.tables import CORE, RAW_QUARANTINE

STEP = "build_core"
REGISTRY_TABLES = list(registry.PARSERS)


def _registry_inputs(spark: SparkSession, ctx: RunContext) -> DataFrame:
    znodes = read_raw(spark, ctx.warehouse, "raw/znodes", ctx.run_id)
    return znodes.transform(registry.select_source).transform(registry.with_path_parts)


def zookeeper_audit_inputs(registrations: DataFrame, owners: DataFrame, topic_partitions: DataFrame) -> dict[str, DataFrame]:
    src = F.lit(assignment_zk.SOURCE).alias("source")
    threads = assignment_zk.consumer_threads(registrations)
    return {
        "observed": owners.select(src, "group_id", "topic", "partition", "broker_id", "owner"),
        "registered": threads.select(src, "group_id", "owner"),
        "subscribed": threads.select(src, "group_id", "topic"),
        "known": topic_partitions.select(src, "topic", "partition", "broker_id"),
    }


def kafka_audit_inputs(latest: DataFrame, members: DataFrame, assignments: DataFrame, partitions: DataFrame) -> dict[str, DataFrame]:
    src = F.lit(assignment_kafka.SOURCE).alias("source")
    return {
        "observed": assignment_kafka.observed_owners(latest, assignments),
        "registered": members.select(src, "group_id", "owner"),
        "subscribed": members.select(src, "group_id", F.explode("subscribed_topics").alias("topic")),
        "known": partitions.select(src, "topic", "partition", "broker_id"),
    }


def build_core(ctx: RunContext, assignors: dict[str, str]) -> dict[str, int]:
    """Builds all ``core/*`` tables of ``ctx.run_id``; returns row counts per table."""
    spark = ctx.spark()
    wh, run_id = ctx.warehouse, ctx.run_id
    counts: dict[str, int] = {}
    with wh.transaction(run_id, step=STEP) as tx, ctx.progress() as progress:
        task = progress.add_task("build core tables", total=len(CORE) + 1)
        # every parser (and the quarantine pass) scans the same znodes: read and split them once
        znodes = _registry_inputs(spark, ctx).persist(StorageLevel.MEMORY_AND_DISK)
        parsed = {table: parse(znodes) for table, parse in registry.PARSERS.items()}
        for table in REGISTRY_TABLES:
            write_staged(tx, table, registry.good(parsed[table]))
            progress.advance(task)

        bad = None
        for frame in parsed.values():
            q = registry.quarantine(frame)
            bad = q if bad is None else bad.unionByName(q)
        quarantined = bad.toArrow()
        tx.write("raw/quarantine", quarantined, RAW_QUARANTINE)
        tx.writer("raw/quarantine")  # an empty file replaces an earlier build's rows
        progress.advance(task)

        registrations = read_staged(spark, tx, "core/consumer_registrations")
        owners = read_staged(spark, tx, "core/partition_owners")
        topic_parts = read_staged(spark, tx, "core/topic_partitions")

        meta = read_raw(spark, wh, "raw/group_metadata", run_id)
        latest = assignment_kafka.latest_groups(meta)
        members = assignment_kafka.latest_members(latest, read_raw(spark, wh, "raw/group_members", run_id))
        assignments = read_raw(spark, wh, "raw/group_assignments", run_id)
        kparts = assignment_kafka.topic_partitions(topic_parts, read_raw(spark, wh, "raw/log_end_offsets", run_id))

        expected = assignment_zk.expected_assignment(registrations, topic_parts, assignors).unionByName(
            assignment_kafka.expected_assignment(members, kparts)
        )
        write_staged(tx, "core/expected_assignment", expected)
        progress.advance(task)

        zk_in = zookeeper_audit_inputs(registrations, owners, topic_parts)
        kf_in = kafka_audit_inputs(latest, members, assignments, kparts)
        inputs = {k: zk_in[k].unionByName(kf_in[k]) for k in zk_in}
        write_staged(
            tx, "core/assignment_audit", audit(read_staged(spark, tx, "core/expected_assignment"), **inputs)
        )
        progress.advance(task)
        znodes.unpersist()
        counts = {table: staged_rows(tx, table) for table in CORE}
        counts["raw/quarantine"] = quarantined.num_rows
    ctx.say(
        f"build {run_id}: "
        + ", ".join(f"{t.split('/', 1)[1]} {n}" for t, n in counts.items() if t.startswith("core/"))
        + f"; {counts['raw/quarantine']} znode value(s) quarantined"
    )
    return counts
