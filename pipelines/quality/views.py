"""The frames the suites look at: pure ``DataFrame -> DataFrame`` functions over the run's
tables (``pipelines.quality.sources``). A view puts an invariant that spans tables (an owner
is a registered consumer, a leader is a registered broker) into columns of one frame, so a
plain GX expectation can judge it row by row and its failing rows can be exported.

``VIEWS`` maps each view name to the tables it reads and the function that builds it; each
function ends with a ``select`` that is the view's contract."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pipelines.spark import assignment_kip848 as kip848
from pipelines.spark.assignment_kafka import latest

ZK_OFFSET_PATH = r"^/consumers/([^/]+)/offsets/([^/]+)/([^/]+)$"
THREAD_SUFFIX = r"^(.*)-([0-9]+)$"


def with_broker_key(df: DataFrame) -> DataFrame:
    """``broker_key``: the 0.7 broker of a partition, -1 for 0.8+ (null ``broker_id``), so the
    key (group, topic, partition, broker) has no nulls."""
    return df.withColumn("broker_key", F.coalesce(F.col("broker_id"), F.lit(-1)))


def assignment_audit(audit: DataFrame) -> DataFrame:
    return audit.select(
        "source", "group_id", "topic", "partition", "broker_id", "expected_owner", "observed_owners", "status"
    )


def current_members(group_metadata: DataFrame, group_members: DataFrame) -> DataFrame:
    """Members of each group's latest metadata record (none when that record is a tombstone)."""
    current = latest(group_metadata, "group_id").select("group_id", "offsets_partition", "log_offset")
    return group_members.join(current, ["group_id", "offsets_partition", "log_offset"], "left_semi").select(
        "group_id", F.col("member_id").alias("name")
    )


def observed_owners(
    audit: DataFrame,
    registrations: DataFrame,
    group_metadata: DataFrame,
    group_members: DataFrame,
    kip848_groups: DataFrame,
    kip848_members: DataFrame,
) -> DataFrame:
    """One row per distinct observed owner of a partition, with ``registered``: the owner is a
    registered consumer of the group (ZooKeeper: ``<consumer_id>`` or ``<consumer_id>-<n>``
    registered under ``/consumers/[group]/ids``), a member of the group's current generation
    (Kafka, classic protocol) or a current member of the group (Kafka, KIP-848 protocol)."""
    owners = (
        audit.select(
            "source", "group_id", "topic", "partition", "broker_id", F.explode("observed_owners").alias("owner")
        )
        .where(F.col("owner").isNotNull())
        .distinct()
        .transform(with_broker_key)
    )
    registry = (
        registrations.select("group_id", F.col("consumer_id").alias("name"), F.lit("zookeeper").alias("source"))
        .unionByName(current_members(group_metadata, group_members).withColumn("source", F.lit("kafka")))
        .unionByName(
            kip848.current_members(kip848_groups, kip848_members)
            .select("group_id", F.col("member_id").alias("name"))
            .withColumn("source", F.lit("kafka"))
        )
        .distinct()
        .withColumn("_hit", F.lit(True))
    )
    consumer_part = F.when(F.col("source") == "zookeeper", F.regexp_extract("owner", THREAD_SUFFIX, 1))
    by_name = registry.withColumnRenamed("_hit", "_exact").withColumnRenamed("name", "owner")
    by_thread = registry.withColumnRenamed("_hit", "_thread").withColumnRenamed("name", "_consumer")
    return (
        owners.withColumn("_consumer", consumer_part)
        .join(by_name, ["source", "group_id", "owner"], "left")
        .join(by_thread, ["source", "group_id", "_consumer"], "left")
        .select(
            "source",
            "group_id",
            "topic",
            "partition",
            "broker_id",
            "broker_key",
            "owner",
            (F.coalesce("_exact", "_thread", F.lit(False))).alias("registered"),
        )
    )


def partition_owners(owners: DataFrame) -> DataFrame:
    return owners.transform(with_broker_key).select(
        "group_id", "topic", "partition", "broker_id", "broker_key", "owner"
    )


def zk_offset_znodes(znodes: DataFrame) -> DataFrame:
    """``/consumers/[group]/offsets/[topic]/[partition]`` znodes with their value as text, as
    stored (Kafka parses it with ``toLong``: no spaces, no newline)."""
    return znodes.where(F.col("path").rlike(ZK_OFFSET_PATH)).select(
        "source",
        "path",
        F.regexp_extract("path", ZK_OFFSET_PATH, 1).alias("group_id"),
        F.regexp_extract("path", ZK_OFFSET_PATH, 2).alias("topic"),
        F.regexp_extract("path", ZK_OFFSET_PATH, 3).alias("partition"),
        F.col("data").cast("string").alias("value"),
        "mzxid",
        "mtime",
    )


def offset_commits(commits: DataFrame) -> DataFrame:
    return commits.select(
        "group_id",
        "topic",
        "partition",
        "committed_offset",
        "is_tombstone",
        "commit_timestamp",
        "offsets_partition",
        "log_offset",
        "segment_file",
    )


def topic_partitions(partitions: DataFrame, brokers: DataFrame) -> DataFrame:
    """Partitions with ``leader_in_isr`` and ``leader_registered`` (null when the layout has
    no leader, as in 0.7)."""
    registered = brokers.select(F.col("broker_id").alias("leader")).where(F.col("leader").isNotNull()).distinct()
    has_leader = F.col("leader").isNotNull()
    return (
        partitions.join(registered.withColumn("_registered", F.lit(True)), "leader", "left")
        .select(
            "topic",
            "partition",
            "broker_id",
            "replicas",
            "leader",
            "leader_epoch",
            "isr",
            F.when(has_leader, F.coalesce(F.array_contains("isr", F.col("leader")), F.lit(False))).alias(
                "leader_in_isr"
            ),
            F.when(has_leader, F.coalesce("_registered", F.lit(False))).alias("leader_registered"),
        )
    )


def brokers(df: DataFrame) -> DataFrame:
    return df.select("broker_id", "host", "port", "endpoints")


def cluster(df: DataFrame) -> DataFrame:
    return df.select("cluster_id", "controller_id", "pending_topic_deletions")


def pending_topic_deletions(df: DataFrame) -> DataFrame:
    return df.select("cluster_id", F.explode("pending_topic_deletions").alias("topic"))


def metadata_partition_records(records: DataFrame) -> DataFrame:
    """Applied PartitionRecords / PartitionChangeRecords of ``raw/metadata_records`` (log and
    snapshot) with ``topic_known``: a TopicRecord of the same run (log or snapshot) created
    their topic id."""
    applied = ~F.coalesce(F.col("txn_state").isin("aborted", "pending"), F.lit(False))
    topic_id = F.get_json_object("record", "$.topicId")
    known = (
        records.where((F.col("record_type") == "TopicRecord") & applied)
        .select(topic_id.alias("topic_id"))
        .distinct()
        .withColumn("_known", F.lit(True))
    )
    return (
        records.where(F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord") & applied)
        .select(
            "source",
            "offset",
            "record_type",
            topic_id.alias("topic_id"),
            F.get_json_object("record", "$.partitionId").cast("int").alias("partition"),
            "source_file",
        )
        .join(known, "topic_id", "left")
        .select(
            "source", "offset", "record_type", "topic_id", "partition", "source_file",
            F.coalesce("_known", F.lit(False)).alias("topic_known"),
        )
    )


def kraft_partitions(df: DataFrame) -> DataFrame:
    return df.select("topic", "topic_id", "partition", "replicas", "isr", "leader")


def remote_log_starts(remote: DataFrame) -> DataFrame:
    """(topic, partition, ``_remote``): the first offset of tiered storage's live remote
    segments (``raw/remote_log_metadata``: a segment whose last event is COPY_SEGMENT_FINISHED,
    its partition not deleted)."""
    seg = Window.partitionBy("remote_segment_id").orderBy(F.desc("metadata_partition"), F.desc("log_offset"))
    last = (remote.where(F.col("remote_segment_id").isNotNull()).withColumn("_n", F.row_number().over(seg))
            .where(F.col("_n") == 1).select("remote_segment_id", "state"))
    deleted = (remote.where(F.col("record_type") == "RemotePartitionDeleteMetadataRecord")
               .select("topic_id", "partition").distinct())
    return (
        remote.where(F.col("record_type") == "RemoteLogSegmentMetadataRecord")
        .join(last.where(F.col("state") == "COPY_SEGMENT_FINISHED"), ["remote_segment_id"])
        .join(deleted, ["topic_id", "partition"], "left_anti")
        .groupBy("topic", "partition").agg(F.min("start_offset").alias("_remote"))
    )


def commits_below_log_start(lag: DataFrame, log_ends: DataFrame, checkpoints: DataFrame, risk: DataFrame,
                            remote: DataFrame) -> DataFrame:
    """Current committed offsets below their partition's log start (the first offset held, in
    the local segments or in tiered storage's live remote segments, or the log dir's log-start
    checkpoint when further; computed here from the raw tables, not taken from the mart), with
    ``flagged``: ``marts/data_loss_risk`` has the row as ``lost``."""
    starts = (
        log_ends.groupBy("topic", "partition").agg(F.min("log_start_offset").alias("_segments"))
        .join(checkpoints.groupBy("topic", "partition").agg(F.max("log_start_offset").alias("_checkpoint")),
              ["topic", "partition"], "full")
        .join(remote_log_starts(remote), ["topic", "partition"], "left")
        .select("topic", "partition",
                F.greatest("_checkpoint", F.least("_segments", "_remote")).alias("log_start_offset"))
    )
    lost = (
        risk.where(F.col("status") == "lost")
        .select("source", "group_id", "topic", "partition")
        .withColumn("_flagged", F.lit(True))
    )
    return (
        lag.where(F.col("broker_id").isNull())
        .join(starts, ["topic", "partition"])
        .where(F.col("committed_offset") < F.col("log_start_offset"))
        .join(lost, ["source", "group_id", "topic", "partition"], "left")
        .select(
            "source", "group_id", "topic", "partition", "committed_offset", "log_start_offset",
            F.coalesce("_flagged", F.lit(False)).alias("flagged"),
        )
    )


def owners_at_moments(history: DataFrame) -> DataFrame:
    """Every owner of each partition at every moment its ownership changed
    (``marts/ownership_history``: the start of each owner interval), one row per owner."""
    h = history.transform(with_broker_key)
    key = ["source", "group_id", "topic", "partition", "broker_key"]
    moments = h.select(*key, F.col("owned_from").alias("moment")).distinct()
    covering = (F.col("owned_from") <= F.col("moment")) & (
        F.col("owned_until").isNull() | (F.col("owned_until") > F.col("moment"))
    )
    return moments.join(h, key).where(covering).select(*key, "moment", "owner").distinct()


def identity(df: DataFrame, *_: DataFrame) -> DataFrame:
    """The view's first table as it is (the others only say whether there is data to judge)."""
    return df


def streams_active_tasks(tasks: DataFrame) -> DataFrame:
    """Per Streams group, one row per member holding a task active now (current assignment, not
    pending revocation: the hand-off of a revoked task is no second owner)."""
    return tasks.where((F.col("assignment") == "current") & (F.col("task_kind") == "active")
                       & ~F.col("pending_revocation")).select("group_id", "subtopology_id", "partition", "member_id")


def findings_of_audited(findings: DataFrame, audited: DataFrame) -> DataFrame:
    """An audit's findings (``audited``: the rows it judged, the view's evidence)."""
    return findings


@dataclass(frozen=True)
class View:
    """``build`` over ``tables``. The view has data to judge only when every table of
    ``evidence`` holds rows and every table of ``present`` exists for the run (an empty
    ``raw/quarantine`` is a finding: nothing quarantined); otherwise its checks are reported
    as without data, never as passed. Other tables may be absent (read as empty)."""

    tables: tuple[str, ...]
    build: Callable[..., DataFrame]
    evidence: tuple[str, ...] = ()
    present: tuple[str, ...] = ()


VIEWS: dict[str, View] = {
    # the ZooKeeper-to-KRaft migration: judged only when the run's metadata log records one
    "migration_audit": View(("core/migration_audit",), identity, evidence=("core/migration_audit",)),
    "migration_offsets": View(("core/migration_offsets", "core/migration_audit"), identity,
                              evidence=("core/migration_audit",)),
    "assignment_audit": View(("core/assignment_audit",), assignment_audit, evidence=("core/assignment_audit",)),
    "observed_owners": View(
        (
            "core/assignment_audit",
            "core/consumer_registrations",
            "raw/group_metadata",
            "raw/group_members",
            "raw/consumer_group_metadata",
            "raw/consumer_group_members",
        ),
        observed_owners,
        evidence=("core/assignment_audit",),
    ),
    "partition_owners": View(("core/partition_owners",), partition_owners, evidence=("core/partition_owners",)),
    "consumer_lag": View(("marts/consumer_lag",), identity, evidence=("marts/consumer_lag",)),
    # no regression among existing commits is a pass; no commits (or no mart) is no data
    "offset_regressions": View(
        ("marts/offset_regressions",), identity, evidence=("raw/offset_commits",), present=("marts/offset_regressions",)
    ),
    "offset_commits": View(("raw/offset_commits",), offset_commits, evidence=("raw/offset_commits",)),
    "ownership_moments": View(
        ("marts/ownership_history",), owners_at_moments, evidence=("marts/ownership_history",)
    ),
    "zk_offset_znodes": View(("raw/znodes",), zk_offset_znodes, evidence=("raw/znodes",)),
    "topic_partitions": View(
        ("core/topic_partitions", "core/brokers"), topic_partitions, evidence=("core/topic_partitions",)
    ),
    "brokers": View(("core/brokers",), brokers, evidence=("core/brokers",)),
    "cluster": View(("core/cluster",), cluster, evidence=("core/cluster",)),
    "pending_topic_deletions": View(("core/cluster",), pending_topic_deletions, evidence=("core/cluster",)),
    "quarantine": View(("raw/quarantine",), identity, present=("raw/quarantine",)),
    "metadata_partition_records": View(
        ("raw/metadata_records",), metadata_partition_records, evidence=("raw/metadata_records",)
    ),
    "kraft_partitions": View(("raw/kraft_partitions",), kraft_partitions, evidence=("raw/kraft_partitions",)),
    "coordinator_records": View(("raw/coordinator_records",), identity, present=("raw/coordinator_records",)),
    # no commit below the log start is a pass; judged only when the run read the data-topic logs
    "commits_below_log_start": View(
        ("marts/consumer_lag", "raw/log_end_offsets", "raw/log_start_checkpoints", "marts/data_loss_risk",
         "raw/remote_log_metadata"),
        commits_below_log_start,
        evidence=("marts/consumer_lag", "raw/log_end_offsets"),
        present=("marts/data_loss_risk",),
    ),
    # MirrorMaker 2 failover readiness: judged only when the run has MirrorMaker records
    "mm2_failover": View(("core/mm2_failover",), identity, evidence=("core/mm2_failover",)),
    "mm2_findings": View(
        ("core/mm2_findings", "core/mm2_failover"), findings_of_audited, evidence=("core/mm2_failover",),
        present=("core/mm2_findings",)
    ),
    # share and Streams groups: judged only when the run has such groups
    "share_partition_state": View(
        ("core/share_partition_state",), identity, evidence=("core/share_partition_state",)
    ),
    "share_group_lag": View(("marts/share_group_lag",), identity, evidence=("marts/share_group_lag",)),
    "share_group_findings": View(
        ("core/share_group_findings", "core/share_group_assignments"), findings_of_audited,
        evidence=("core/share_group_assignments",), present=("core/share_group_findings",),
    ),
    "streams_group_tasks": View(("core/streams_group_tasks",), identity, evidence=("core/streams_group_tasks",)),
    "streams_active_tasks": View(
        ("core/streams_group_tasks",), streams_active_tasks, evidence=("core/streams_group_tasks",)
    ),
    "streams_group_findings": View(
        ("core/streams_group_findings", "core/streams_group_tasks"), findings_of_audited,
        evidence=("core/streams_group_tasks",), present=("core/streams_group_findings",),
    ),
    "streams_group_lag": View(("marts/streams_group_lag",), identity, evidence=("marts/streams_group_lag",)),
    "group_epochs": View(("marts/group_epochs",), identity, evidence=("marts/group_epochs",)),
}


def missing_data(name: str, rows: Callable[[str], int | None]) -> str | None:
    """Why view ``name`` has no data to judge (``rows(table)``: its row count, None when the run
    does not have it), or None when it has."""
    view = VIEWS[name]
    absent = [t for t in (*view.evidence, *view.present) if rows(t) is None]
    if absent:
        return f"the run has no {', '.join(dict.fromkeys(absent))}"
    empty = [t for t in view.evidence if not rows(t)]
    return f"{', '.join(empty)} is empty" if empty else None


def build_view(name: str, tables) -> DataFrame:
    """The view ``name`` over ``tables`` (a mapping table name -> DataFrame)."""
    if name not in VIEWS:
        raise ValueError(f"unknown view {name!r}; known: {', '.join(sorted(VIEWS))}")
    view = VIEWS[name]
    return view.build(*(tables[t] for t in view.tables))
