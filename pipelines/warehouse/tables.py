"""Arrow schemas of every warehouse table written outside dbt: declared once, used by
the extractors (pyarrow), the Spark jobs (converted in ``pipelines.spark.schemas``) and tests.

The contract (``docs/contract.md``) fixes names and columns. ``run_id`` is not stored in
the Parquet files: it is the hive partition (``<table>/run_id=<id>/``), so every engine that
reads the table with hive partitioning sees it as a column.
"""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("ms", tz="UTC")

RAW_ZNODES = pa.schema(
    [
        ("source", pa.string()),  # 'live' | 'snapshot'
        ("path", pa.string()),
        ("data", pa.binary()),
        ("czxid", pa.int64()),
        ("mzxid", pa.int64()),
        ("pzxid", pa.int64()),
        ("ctime", TS),
        ("mtime", TS),
        ("version", pa.int32()),
        ("cversion", pa.int32()),
        ("aversion", pa.int32()),
        ("ephemeral_owner", pa.int64()),
        ("data_length", pa.int32()),
        ("num_children", pa.int32()),
    ]
)

RAW_OFFSET_COMMITS = pa.schema(
    [
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),  # null for a tombstone
        ("leader_epoch", pa.int32()),  # null if absent
        ("metadata", pa.string()),
        ("commit_timestamp", TS),
        ("expire_timestamp", TS),  # null if absent
        ("is_tombstone", pa.bool_()),
        ("key_version", pa.int16()),
        ("value_version", pa.int16()),
        ("offsets_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("producer_id", pa.int64()),
        ("is_transactional", pa.bool_()),
        ("txn_state", pa.string()),  # committed | aborted | pending | null
        ("segment_file", pa.string()),
        ("topic_id", pa.string()),  # OffsetCommitValue v4 tag 0 (Kafka 4.1+), Kafka's text form; null if absent
    ]
)

RAW_GROUP_METADATA = pa.schema(
    [
        ("group_id", pa.string()),
        ("generation", pa.int32()),
        ("protocol_type", pa.string()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("state_timestamp", TS),
        ("is_tombstone", pa.bool_()),
        ("value_version", pa.int16()),
        ("offsets_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("segment_file", pa.string()),
    ]
)

RAW_GROUP_MEMBERS = pa.schema(
    [
        ("group_id", pa.string()),
        ("generation", pa.int32()),
        ("offsets_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("session_timeout_ms", pa.int32()),
        ("rebalance_timeout_ms", pa.int32()),
        ("subscribed_topics", pa.list_(pa.string())),
    ]
)

RAW_GROUP_ASSIGNMENTS = pa.schema(
    [
        ("group_id", pa.string()),
        ("generation", pa.int32()),
        ("offsets_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("member_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
    ]
)

RAW_COORDINATOR_RECORDS = pa.schema(
    [
        ("key_type", pa.int16()),
        ("group_id", pa.string()),  # null where the key has none
        ("key", pa.binary()),
        ("value", pa.binary()),  # null = tombstone
        ("offsets_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("segment_file", pa.string()),
    ]
)

# --- KIP-848 consumer groups: key types 3-8 and 16, one row per record ---------------------
# Every table ends with the record's place: is_tombstone (the value is null: the record is
# deleted), value_version (null for a tombstone), offsets_partition, log_offset, segment_file,
# batch_timestamp (when the coordinator wrote it: the first timestamp of the record's batch,
# pipelines.kafka.batch_times.first_timestamps; null when the batch has none), batch_offset (the
# base offset of the record's batch: the records of one batch are one coordinator operation).

TOPIC_PARTITIONS = pa.list_(pa.struct([("topic_id", pa.string()), ("partitions", pa.list_(pa.int32()))]))
_PLACE = [
    ("is_tombstone", pa.bool_()),
    ("value_version", pa.int16()),
    ("offsets_partition", pa.int32()),
    ("log_offset", pa.int64()),
    ("segment_file", pa.string()),
    ("batch_timestamp", TS),
    ("batch_offset", pa.int64()),
]

RAW_CONSUMER_GROUP_METADATA = pa.schema([("group_id", pa.string()), ("group_epoch", pa.int32()), *_PLACE])  # 3

# 4: one row per topic (one row of nulls for a tombstone or a record without topics)
RAW_CONSUMER_GROUP_PARTITION_METADATA = pa.schema(
    [("group_id", pa.string()), ("topic_id", pa.string()), ("topic", pa.string()), ("num_partitions", pa.int32()),
     *_PLACE]
)

RAW_CONSUMER_GROUP_MEMBERS = pa.schema(  # 5
    [
        ("group_id", pa.string()),
        ("member_id", pa.string()),
        ("instance_id", pa.string()),
        ("rack_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("subscribed_topics", pa.list_(pa.string())),
        ("subscribed_topic_regex", pa.string()),
        ("rebalance_timeout_ms", pa.int32()),
        ("server_assignor", pa.string()),
        ("classic_member_metadata", pa.string()),  # tag 0, as JSON; null for a consumer-protocol member
        *_PLACE,
    ]
)

RAW_CONSUMER_GROUP_TARGET_METADATA = pa.schema(  # 6
    [("group_id", pa.string()), ("assignment_epoch", pa.int32()), *_PLACE]
)

RAW_CONSUMER_GROUP_TARGET_ASSIGNMENTS = pa.schema(  # 7
    [("group_id", pa.string()), ("member_id", pa.string()), ("topic_partitions", TOPIC_PARTITIONS), *_PLACE]
)

RAW_CONSUMER_GROUP_CURRENT_ASSIGNMENTS = pa.schema(  # 8
    [
        ("group_id", pa.string()),
        ("member_id", pa.string()),
        ("member_epoch", pa.int32()),
        ("previous_member_epoch", pa.int32()),
        ("state", pa.string()),  # STABLE | UNREVOKED_PARTITIONS | UNRELEASED_PARTITIONS | UNKNOWN (MemberState)
        ("assigned_partitions", TOPIC_PARTITIONS),
        ("partitions_pending_revocation", TOPIC_PARTITIONS),
        *_PLACE,
    ]
)

RAW_CONSUMER_GROUP_REGEXES = pa.schema(  # 16
    [
        ("group_id", pa.string()),
        ("regular_expression", pa.string()),
        ("topics", pa.list_(pa.string())),
        ("regex_version", pa.int64()),
        ("resolved_at", TS),
        *_PLACE,
    ]
)

RAW_GROUP_COORDINATOR_RECORDS = pa.schema(  # share (9-15) and streams (17-24) groups, decoded generically
    [
        ("key_type", pa.int16()),
        ("record_type", pa.string()),  # the schema name: ShareGroupMemberMetadata, StreamsGroupTopology, ...
        ("group_id", pa.string()),
        ("member_id", pa.string()),  # the key's second string, where it has one
        ("fields", pa.string()),  # the value as JSON (Kafka's lower camel case names); null if not decoded
        ("value", pa.binary()),  # the value, when fields is null and it is not a tombstone
        *_PLACE,
    ]
)

# --- share groups' state (KIP-932): the __share_group_state topic, one row per record --------
# ShareSnapshot: the whole state of a share-partition; ShareUpdate: the state batches changed
# since (start_offset -1: unchanged; state_epoch, create/write_timestamp null). Delivery states
# 0 AVAILABLE, 1 ACQUIRED, 2 ACKNOWLEDGED, 4 ARCHIVED. is_replayable: at or after the
# share-partition's first ShareSnapshot in the files (the coordinator prunes the topic below its
# latest snapshot). value: the bytes of a value that did not decode (also in raw/quarantine).
SHARE_STATE_BATCHES = pa.list_(pa.struct([
    ("first_offset", pa.int64()), ("last_offset", pa.int64()), ("delivery_state", pa.int8()),
    ("delivery_state_name", pa.string()), ("delivery_count", pa.int16()),
]))
RAW_SHARE_PARTITION_STATES = pa.schema(
    [
        ("record_type", pa.string()),  # ShareSnapshot | ShareUpdate
        ("group_id", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("is_tombstone", pa.bool_()),
        ("value_version", pa.int16()),
        ("snapshot_epoch", pa.int32()),
        ("state_epoch", pa.int32()),
        ("leader_epoch", pa.int32()),
        ("start_offset", pa.int64()),
        ("delivery_complete_count", pa.int32()),  # tag 0 (Kafka 4.2+); -1 when the writer did not set it
        ("create_timestamp", TS),
        ("write_timestamp", TS),
        ("state_batches", SHARE_STATE_BATCHES),
        ("unknown_tagged_fields", pa.string()),
        ("value", pa.binary()),
        ("is_replayable", pa.bool_()),
        ("state_partition", pa.int32()),  # the __share_group_state partition
        ("log_offset", pa.int64()),
        ("segment_file", pa.string()),
        ("batch_timestamp", TS),
        ("batch_offset", pa.int64()),
    ]
)

# MirrorMaker 2's offset syncs (mm2-offset-syncs.<target alias>.internal, in the cluster it was
# read from) and checkpoints (<source alias>.checkpoints.internal): one row per record
# (pipelines.kafka.mm2_records). topic/partition of an offset sync: the source partition; of a
# checkpoint: the renamed topic on the target. value: the bytes of a checkpoint value of a version
# no field table knows (its fields null; also in raw/quarantine).
RAW_MM2_OFFSET_SYNCS = pa.schema(
    [
        ("target_alias", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("upstream_offset", pa.int64()),
        ("downstream_offset", pa.int64()),
        ("syncs_topic", pa.string()),
        ("syncs_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("batch_timestamp", TS),
        ("segment_file", pa.string()),
    ]
)
RAW_MM2_CHECKPOINTS = pa.schema(
    [
        ("source_alias", pa.string()),
        ("group_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("upstream_offset", pa.int64()),
        ("downstream_offset", pa.int64()),
        ("metadata", pa.string()),
        ("value_version", pa.int16()),
        ("value", pa.binary()),
        ("checkpoints_topic", pa.string()),
        ("checkpoints_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("batch_timestamp", TS),
        ("segment_file", pa.string()),
    ]
)

RAW_LOG_END_OFFSETS = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("log_start_offset", pa.int64()),
        ("log_end_offset", pa.int64()),
        ("max_timestamp", TS),
    ]
)

# --- data-topic batch timestamps: one row per batch header of the data topics -----------------

RAW_BATCH_TIMESTAMPS = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("segment_base_offset", pa.int64()),  # the segment file's name
        ("position", pa.int64()),  # byte position of the batch in its segment
        ("size_bytes", pa.int64()),
        ("magic", pa.int8()),
        ("base_offset", pa.int64()),  # first offset the batch may hold (compaction may have removed it)
        ("last_offset", pa.int64()),
        ("record_count", pa.int32()),  # records present; null for a legacy compressed wrapper
        ("is_control", pa.bool_()),  # a transaction marker: an offset, no record a consumer sees
        ("timestamp_type", pa.string()),  # 'CreateTime' | 'LogAppendTime'; null for magic 0
        ("first_timestamp", TS),  # timestamp of the batch's first present record; null when unknown
        ("max_timestamp", TS),  # greatest record timestamp (LogAppendTime: every record's)
    ]
)

RAW_LOG_START_CHECKPOINTS = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("log_start_offset", pa.int64()),
        ("checkpoint_file", pa.string()),  # <log dir>/log-start-offset-checkpoint
    ]
)

# Tiered storage (KIP-405): every record of __remote_log_metadata (pipelines.kafka.remote_log)
REMOTE_LEADER_EPOCHS = pa.list_(pa.struct([("leader_epoch", pa.int32()), ("start_offset", pa.int64())]))
RAW_REMOTE_LOG_METADATA = pa.schema(
    [
        ("record_type", pa.string()),  # RemoteLogSegmentMetadata[Update]Record | RemotePartitionDeleteMetadataRecord
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("remote_segment_id", pa.string()),  # null for a partition delete
        ("start_offset", pa.int64()),  # first offset of the segment (RemoteLogSegmentMetadataRecord only)
        ("end_offset", pa.int64()),  # last offset of the segment, inclusive
        ("broker_id", pa.int32()),  # the broker (or controller) that wrote the event
        ("max_timestamp", TS),  # greatest record timestamp of the segment
        ("event_timestamp", TS),  # when the event was written
        ("segment_leader_epochs", REMOTE_LEADER_EPOCHS),
        ("segment_size_bytes", pa.int32()),
        ("state_id", pa.int8()),  # RemoteLogSegmentState / RemotePartitionDeleteState id
        ("state", pa.string()),  # COPY_SEGMENT_STARTED .. DELETE_SEGMENT_FINISHED, DELETE_PARTITION_*
        ("custom_metadata", pa.binary()),
        ("metadata_partition", pa.int32()),  # the __remote_log_metadata partition
        ("log_offset", pa.int64()),
        ("batch_timestamp", TS),
        ("segment_file", pa.string()),
    ]
)

# Every change of the coordination znodes the txn-log replay applied (pipelines.zookeeper.history)
RAW_ZNODE_CHANGES = pa.schema(
    [
        ("zxid", pa.int64()),
        ("seq", pa.int32()),  # order of the changes of one txn (multi sub-txns, closeSession deletes)
        ("time", TS),  # the txn's time; for 'snapshot' rows the node's mtime
        ("session", pa.int64()),  # TxnHeader.clientId; 0 for 'snapshot' rows
        ("op", pa.string()),  # 'snapshot' | 'create' | 'set' | 'delete'
        ("kind", pa.string()),  # consumer_ids | consumer_owners | consumer_offsets | broker_ids | broker_topics
        ("path", pa.string()),
        ("value", pa.binary()),  # the data written; null for a delete
        ("version", pa.int32()),  # the data version after the change; null for a delete
        ("ephemeral_owner", pa.int64()),  # creates and snapshot rows; null otherwise
    ]
)

# Topic configs from a file the user gives (kaudit extract log-end --topic-configs)
RAW_TOPIC_CONFIGS = pa.schema(
    [
        ("topic", pa.string()),
        ("config_name", pa.string()),
        ("config_value", pa.string()),
        ("config_file", pa.string()),  # <file>:<line>
    ]
)

RAW_QUARANTINE = pa.schema(
    [
        ("source", pa.string()),  # which extractor / step: 'offsets', 'zk-snapshot', 'registry', ...
        ("location", pa.string()),  # file:byte-position, or znode path
        ("reason", pa.string()),
        ("raw", pa.binary()),
    ]
)

# --- KRaft metadata: the records, and the registry they replay to ---------------------------

I32_LIST = pa.list_(pa.int32())
STR_LIST = pa.list_(pa.string())

RAW_METADATA_RECORDS = pa.schema(
    [
        ("source", pa.string()),  # 'log' | 'snapshot'
        ("offset", pa.int64()),  # log offset; in a snapshot, the record's position in it
        ("timestamp", TS),  # the batch's append time
        ("record_type", pa.string()),  # schema name (PartitionRecord, LeaderChangeMessage, ...); null if unknown
        ("api_key", pa.int16()),  # metadata records; null for control records
        ("control_type", pa.int16()),  # Raft control records; null for metadata records
        ("version", pa.int16()),
        ("record", pa.string()),  # decoded fields as JSON (Kafka's lower camel case names); null if unknown
        ("txn_state", pa.string()),  # 'aborted' | 'pending' inside a metadata transaction, else null
        ("raw", pa.binary()),  # the value, for records of an unknown apiKey/version only
        ("source_file", pa.string()),
        ("byte_position", pa.int64()),
    ]
)

RAW_KRAFT_BROKERS = pa.schema(
    [
        ("broker_id", pa.int32()),
        ("host", pa.string()),  # of the first endpoint
        ("port", pa.int32()),
        ("endpoints", STR_LIST),  # NAME://host:port
        ("rack", pa.string()),
        ("fenced", pa.bool_()),
        ("in_controlled_shutdown", pa.bool_()),
        ("broker_epoch", pa.int64()),
        ("incarnation_id", pa.string()),
        ("log_dirs", STR_LIST),
    ]
)

RAW_KRAFT_TOPICS = pa.schema(
    [
        ("topic_id", pa.string()),
        ("topic", pa.string()),
        ("created_offset", pa.int64()),  # null when created before the snapshot the replay starts from
        ("created_at", TS),
        ("deleted_offset", pa.int64()),  # null while the topic exists
        ("deleted_at", TS),
    ]
)

RAW_KRAFT_PARTITIONS = pa.schema(
    [
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("replicas", I32_LIST),
        ("isr", I32_LIST),
        ("leader", pa.int32()),
        ("leader_epoch", pa.int32()),
        ("partition_epoch", pa.int32()),
        ("leader_recovery_state", pa.int8()),
        ("removing_replicas", I32_LIST),
        ("adding_replicas", I32_LIST),
        ("directories", STR_LIST),
        ("eligible_leader_replicas", I32_LIST),
        ("last_known_elr", I32_LIST),
    ]
)

RAW_KRAFT_CONFIGS = pa.schema(
    [("resource_type", pa.string()), ("resource_name", pa.string()), ("name", pa.string()), ("value", pa.string())]
)

RAW_KRAFT_CLUSTER = pa.schema(
    [
        ("cluster_id", pa.string()),  # meta.properties of the metadata log dir, when present
        ("controller_id", pa.int32()),  # the leader of the last LeaderChange record
        ("metadata_offset", pa.int64()),  # the last offset the state includes
        ("metadata_timestamp", TS),
        ("snapshot", pa.string()),  # the snapshot the replay started from
        ("features", pa.map_(pa.string(), pa.int16())),
    ]
)

RAW = {
    "raw/metadata_records": RAW_METADATA_RECORDS,
    "raw/kraft_brokers": RAW_KRAFT_BROKERS,
    "raw/kraft_topics": RAW_KRAFT_TOPICS,
    "raw/kraft_partitions": RAW_KRAFT_PARTITIONS,
    "raw/kraft_configs": RAW_KRAFT_CONFIGS,
    "raw/kraft_cluster": RAW_KRAFT_CLUSTER,
    "raw/znodes": RAW_ZNODES,
    "raw/znode_changes": RAW_ZNODE_CHANGES,
    "raw/offset_commits": RAW_OFFSET_COMMITS,
    "raw/group_metadata": RAW_GROUP_METADATA,
    "raw/group_members": RAW_GROUP_MEMBERS,
    "raw/group_assignments": RAW_GROUP_ASSIGNMENTS,
    "raw/coordinator_records": RAW_COORDINATOR_RECORDS,
    "raw/consumer_group_metadata": RAW_CONSUMER_GROUP_METADATA,
    "raw/consumer_group_partition_metadata": RAW_CONSUMER_GROUP_PARTITION_METADATA,
    "raw/consumer_group_members": RAW_CONSUMER_GROUP_MEMBERS,
    "raw/consumer_group_target_metadata": RAW_CONSUMER_GROUP_TARGET_METADATA,
    "raw/consumer_group_target_assignments": RAW_CONSUMER_GROUP_TARGET_ASSIGNMENTS,
    "raw/consumer_group_current_assignments": RAW_CONSUMER_GROUP_CURRENT_ASSIGNMENTS,
    "raw/consumer_group_regexes": RAW_CONSUMER_GROUP_REGEXES,
    "raw/group_coordinator_records": RAW_GROUP_COORDINATOR_RECORDS,
    "raw/share_partition_states": RAW_SHARE_PARTITION_STATES,
    "raw/mm2_offset_syncs": RAW_MM2_OFFSET_SYNCS,
    "raw/mm2_checkpoints": RAW_MM2_CHECKPOINTS,
    "raw/log_end_offsets": RAW_LOG_END_OFFSETS,
    "raw/batch_timestamps": RAW_BATCH_TIMESTAMPS,
    "raw/log_start_checkpoints": RAW_LOG_START_CHECKPOINTS,
    "raw/remote_log_metadata": RAW_REMOTE_LOG_METADATA,
    "raw/topic_configs": RAW_TOPIC_CONFIGS,
    "raw/quarantine": RAW_QUARANTINE,
}


# an assignment epoch of a share or Streams group and its settling (pipelines.spark.group_epochs)
_GROUP_EPOCH = [
    ("group_id", pa.string()),
    ("assignment_epoch", pa.int32()),
    ("offsets_partition", pa.int32()),  # where the epoch's TargetAssignmentMetadata record is
    ("log_offset", pa.int64()),
    ("target_at", TS),  # its batch timestamp
    ("members", pa.int32()),  # members with a target assignment at the epoch
    ("members_settled", pa.int32()),  # of them, at the epoch and stable before the next epoch's target
    ("member_ids", pa.list_(pa.string())),  # the members with a target assignment at the epoch, sorted
    ("settled", pa.bool_()),
    ("settled_at", TS),  # the last of them; null when not settled
    ("settle_ms", pa.int64()),
    ("is_transition", pa.bool_()),  # never settled and superseded (not a fault); null: the last, unsettled
]


CORE = {
    "core/brokers": pa.schema(
        [
            ("broker_id", pa.int32()),
            ("host", pa.string()),
            ("port", pa.int32()),
            ("endpoints", STR_LIST),
            ("rack", pa.string()),  # KRaft only (ADDED_COLUMNS)
            ("fenced", pa.bool_()),  # KRaft only
        ]
    ),
    "core/topic_partitions": pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("broker_id", pa.int32()),
            ("replicas", I32_LIST),
            ("leader", pa.int32()),
            ("leader_epoch", pa.int32()),
            ("isr", I32_LIST),
            ("topic_id", pa.string()),  # KRaft only (ADDED_COLUMNS)
            ("directories", STR_LIST),
            ("eligible_leader_replicas", I32_LIST),
        ]
    ),
    "core/consumer_registrations": pa.schema(
        [("group_id", pa.string()), ("consumer_id", pa.string()), ("topic", pa.string()), ("streams", pa.int32())]
    ),
    "core/partition_owners": pa.schema(
        [
            ("group_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("broker_id", pa.int32()),
            ("owner", pa.string()),
        ]
    ),
    "core/zk_offsets": pa.schema(
        [
            ("group_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("broker_id", pa.int32()),
            ("committed_offset", pa.int64()),
            ("mtime", TS),
        ]
    ),
    "core/cluster": pa.schema(
        [("cluster_id", pa.string()), ("controller_id", pa.int32()), ("pending_topic_deletions", STR_LIST)]
    ),
    "core/expected_assignment": pa.schema(
        [
            ("source", pa.string()),
            ("group_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("broker_id", pa.int32()),
            ("expected_owner", pa.string()),
            ("assignor", pa.string()),
        ]
    ),
    "core/assignment_audit": pa.schema(
        [
            ("source", pa.string()),
            ("group_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("broker_id", pa.int32()),
            ("expected_owner", pa.string()),
            ("observed_owners", STR_LIST),
            ("status", pa.string()),
        ]
    ),
    "core/consumer_group_findings": pa.schema(  # KIP-848 groups: pipelines.spark.assignment_kip848
        [
            ("source", pa.string()),
            ("group_id", pa.string()),
            ("member_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("finding", pa.string()),  # one of CONSUMER_GROUP_FINDINGS
            ("detail", pa.string()),
        ]
    ),
    # The states of ZooKeeper-era groups replayed from raw/znode_changes (pipelines.spark.rebalances)
    "core/rebalance_states": pa.schema(
        [
            ("source", pa.string()),
            ("group_id", pa.string()),
            ("state_zxid", pa.int64()),  # the trigger's txn
            ("started_at", TS),
            ("trigger", pa.string()),  # consumer | broker | topic | snapshot
            ("trigger_op", pa.string()),  # create | set | delete | snapshot
            ("trigger_path", pa.string()),
            ("next_zxid", pa.int64()),  # the next trigger of the group; null for the last state
            ("next_at", TS),
            ("settled", pa.bool_()),  # the owners matched the expected assignment before the next trigger
            ("settled_zxid", pa.int64()),
            ("settled_at", TS),
            ("expected_partitions", pa.int32()),
            ("unowned_partitions", pa.int32()),  # expected partitions without an owner at some moment of the state
            ("double_claimed_partitions", pa.int32()),
            ("wrong_owner_partitions", pa.int32()),  # at the end of the state
            ("unowned_at_end", pa.int32()),
            ("unexpected_partitions", pa.int32()),
            ("assignor", pa.string()),
            # Kafka-era states (pipelines.spark.generations): null for ZooKeeper (ADDED_COLUMNS)
            ("group_protocol", pa.string()),  # classic | consumer (KIP-848)
            ("generation", pa.int32()),  # classic: the generation; consumer: the group epoch
            ("offsets_partition", pa.int32()),  # the record that began the state
            ("log_offset", pa.int64()),
            ("next_log_offset", pa.int64()),  # the next state's or the group's tombstone; null: the last
            ("settled_log_offset", pa.int64()),  # consumer: every targeted member reached the epoch
            # the settle rule (pipelines.settle), both eras: a rebalance is a run of unsettled states
            # and the state that settled it
            ("rebalance_started_at", TS),  # the start of the rebalance this state belongs to
            ("stuck", pa.bool_()),  # the rebalance settled after the stuck limit, or not by then
            ("settle_window_ms", pa.int64()),  # the settle window the build used
            ("stuck_limit_ms", pa.int64()),  # the stuck limit the build used
        ]
    ),
    "core/settled_audit": pa.schema(
        [
            ("source", pa.string()),
            ("group_id", pa.string()),
            ("state_zxid", pa.int64()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("broker_id", pa.int32()),
            ("expected_owner", pa.string()),
            ("observed_owner", pa.string()),  # the owner the state ended with
            ("status", pa.string()),  # ok | wrong_owner | unowned | unexpected_partition; Kafka also
            # duplicate_owner (double claimed: observed_owner lists the members) | unknown_owner
            ("owner_since", pa.int64()),  # the zxid that wrote the observed owner
            ("held_from", TS),
            ("held_until_zxid", pa.int64()),  # the next trigger; null: still held at the end of the history
            ("held_until", TS),
            # Kafka-era states: the state's key in core/rebalance_states; null for ZooKeeper
            ("group_protocol", pa.string()),
            ("generation", pa.int32()),
            ("offsets_partition", pa.int32()),
            ("log_offset", pa.int64()),
            ("settled", pa.bool_()),  # the state settled: only then is a status other than ok a finding
        ]
    ),
    # share groups (KIP-932): pipelines.spark.share_groups; lag, archived and in-flight counts and
    # archived_offsets are null where state_known is false
    "core/share_partition_state": pa.schema(
        [
            ("group_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int32()),
            ("topic", pa.string()),  # null when no record names the topic id
            ("state_known", pa.bool_()),  # replayed from a ShareSnapshot, every value after it decoded
            ("records", pa.int64()),  # __share_group_state records of the share-partition
            ("snapshot_log_offset", pa.int64()),  # the snapshot the replay started from
            ("start_offset", pa.int64()),
            ("state_epoch", pa.int32()),
            ("leader_epoch", pa.int32()),
            ("delivery_complete_count", pa.int32()),  # as the coordinator wrote it (-1: not written)
            ("acknowledged", pa.int64()),  # offsets at or above the start, by delivery state
            ("archived", pa.int64()),
            ("in_flight", pa.int64()),  # available again or acquired
            ("archived_offsets", pa.list_(pa.int64())),
            ("archived_max_delivery_count", pa.int16()),
            ("log_end_offset", pa.int64()),
            ("lag", pa.int64()),  # log end - start - (acknowledged + archived): the broker's lag
        ]
    ),
    "core/share_group_assignments": pa.schema(  # one row per live member and held partition
        [
            ("group_id", pa.string()),
            ("member_id", pa.string()),
            ("client_id", pa.string()),
            ("client_host", pa.string()),
            ("subscribed_topics", pa.list_(pa.string())),
            ("member_epoch", pa.int32()),
            ("group_epoch", pa.int32()),
            ("assignment_epoch", pa.int32()),
            ("topic_id", pa.string()),  # null (and topic, partition): a member holding nothing
            ("topic", pa.string()),
            ("partition", pa.int32()),
        ]
    ),
    "core/share_group_findings": pa.schema(
        [
            ("group_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int32()),
            ("topic", pa.string()),
            ("member_id", pa.string()),
            ("finding", pa.string()),  # one of SHARE_GROUP_FINDINGS
            ("detail", pa.string()),
        ]
    ),
    # every assignment epoch of every share group, audited (pipelines.spark.share_epochs)
    "core/share_group_epochs": pa.schema(
        [
            *_GROUP_EPOCH,
            ("partitions_targeted", pa.int32()),  # distinct partitions of the target
            ("partitions_assignable", pa.int32()),  # subscribed partitions with initialized state; null: unknown
            ("partitions_initializing", pa.int32()),  # subscribed partitions whose state was being initialized
            ("partitions_unassigned", pa.int32()),  # assignable partitions targeted to no member
            ("partitions_shared", pa.int32()),  # partitions targeted to more than one member
            ("partitions_over_shared", pa.int32()),  # to more than ceil(members / assignable); null: mixed subs
        ]
    ),
    # streams groups (KIP-1071): pipelines.spark.streams_groups
    "core/streams_group_topology": pa.schema(  # one row per (subtopology, topic, role) of the live topology
        [
            ("group_id", pa.string()),
            ("topology_epoch", pa.int32()),
            ("subtopology_id", pa.string()),
            ("topic", pa.string()),
            ("role", pa.string()),  # source | repartition_source | repartition_sink | changelog
            ("partitions", pa.int32()),  # declared for internal topics; null for source and sink topics
        ]
    ),
    "core/streams_group_tasks": pa.schema(  # one row per task a live member holds or is targeted
        [
            ("group_id", pa.string()),
            ("member_id", pa.string()),
            ("process_id", pa.string()),
            ("client_id", pa.string()),
            ("member_epoch", pa.int32()),  # null on target rows
            ("topology_epoch", pa.int32()),
            ("group_epoch", pa.int32()),
            ("assignment_epoch", pa.int32()),
            ("assignment", pa.string()),  # current | target
            ("task_kind", pa.string()),  # active | standby | warmup
            ("subtopology_id", pa.string()),
            ("partition", pa.int32()),
            ("pending_revocation", pa.bool_()),
        ]
    ),
    # every assignment epoch of every Streams group, audited (pipelines.spark.streams_groups.epochs)
    "core/streams_group_epochs": pa.schema(
        [
            *_GROUP_EPOCH,
            ("active_tasks", pa.int32()),  # distinct active tasks of the target
            ("active_targeted_twice", pa.int32()),  # active tasks targeted to more than one member
            ("standby_with_active", pa.int32()),  # tasks targeted standby or warm-up and active to one member
        ]
    ),
    # MirrorMaker 2 failover readiness (pipelines.spark.mm2): per group and replicated source
    # partition, its source offset, MirrorMaker's translation, its newest checkpoint and the
    # target's committed offset; records a failover now re-reads or skips
    "core/mm2_failover": pa.schema(
        [
            ("source_alias", pa.string()),
            ("target_alias", pa.string()),
            ("group_id", pa.string()),
            ("topic", pa.string()),  # the source topic
            ("partition", pa.int32()),
            ("target_topic", pa.string()),
            ("source_committed_offset", pa.int64()),  # null: no offset on the source
            ("sync_upstream_offset", pa.int64()),  # the newest usable sync at or below it
            ("sync_downstream_offset", pa.int64()),
            ("translated_offset", pa.int64()),  # MirrorMaker's translation; null: none
            ("expected_target_offset", pa.int64()),  # the position that re-reads and skips nothing
            ("checkpoint_upstream_offset", pa.int64()),  # the newest checkpoint; null: none
            ("checkpoint_downstream_offset", pa.int64()),
            ("checkpoint_recomputed_offset", pa.int64()),
            ("checkpoint_status", pa.string()),  # exact | older_sync | disagrees | null
            ("target_committed_offset", pa.int64()),  # null: the group has no offset on the target
            ("records_reread", pa.int64()),
            ("records_skipped", pa.int64()),
        ]
    ),
    "core/mm2_findings": pa.schema(
        [
            ("source_alias", pa.string()),
            ("target_alias", pa.string()),
            ("group_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("finding", pa.string()),  # one of MM2_FINDINGS
            ("detail", pa.string()),
        ]
    ),
    "core/streams_group_findings": pa.schema(
        [
            ("group_id", pa.string()),
            ("member_id", pa.string()),
            ("subtopology_id", pa.string()),
            ("partition", pa.int32()),
            ("finding", pa.string()),  # one of STREAMS_GROUP_FINDINGS
            ("detail", pa.string()),
        ]
    ),
    # the ZooKeeper-to-KRaft migration audit (pipelines.spark.migration)
    "core/migration_states": pa.schema(
        [
            ("source", pa.string()),  # 'log' | 'snapshot' of the metadata log
            ("offset", pa.int64()),
            ("at", TS),
            ("state_id", pa.int8()),  # ZkMigrationState: 0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION
            ("state", pa.string()),
        ]
    ),
    "core/migration_audit": pa.schema(
        [
            ("kind", pa.string()),  # cluster_id | topic_id | replicas | isr | config | broker
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("name", pa.string()),  # the config name, the broker id
            ("zookeeper", pa.string()),  # the value ZooKeeper held (lists: sorted, comma-separated)
            ("kraft", pa.string()),  # the value KRaft holds
            ("status", pa.string()),  # match | differs | only_zookeeper | only_kraft
            ("is_finding", pa.bool_()),  # a cluster id, topic id, replicas or config that differs or was lost
        ]
    ),
    "core/migration_offsets": pa.schema(
        [
            ("group_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("before_offset", pa.int64()),  # the committed offset when the migration began; null: none
            ("before_at", TS),
            ("after_offset", pa.int64()),  # the committed offset now; null: none
            ("after_at", TS),
            ("status", pa.string()),  # lost | moved_backwards | advanced | unchanged | new
            ("is_finding", pa.bool_()),  # lost or moved_backwards
        ]
    ),
}

# what the checks of `kaudit validate` found, one row per check of the run (pipelines.quality.results)
QUALITY = {
    "quality/validation_results": pa.schema(
        [
            ("suite", pa.string()),  # the kaudit suite (expectations/<suite>.py)
            ("expectation", pa.string()),  # the check's name (its key in results.json)
            ("gx_expectation", pa.string()),  # Great Expectations' expectation type
            ("view", pa.string()),  # the validation view the check reads (pipelines.quality.views)
            ("columns", STR_LIST),  # the view's columns the expectation names; empty: a table-level check
            ("level", pa.string()),  # error | warning
            ("success", pa.bool_()),  # null: not evaluated (no data: see no_data)
            ("element_count", pa.int64()),  # as Great Expectations returned them; null: not in its result
            ("unexpected_count", pa.int64()),
            ("unexpected_percent", pa.float64()),
            ("observed_value", pa.float64()),  # a numeric observed value (a row count)
            ("observed_json", pa.string()),  # the observed value of any type, as JSON
            ("error", pa.string()),  # the exception the expectation raised
            ("no_data", pa.string()),  # why the check was not evaluated
            ("description", pa.string()),
            ("evaluated_at", TS),  # when Great Expectations ran the check's suite
        ]
    ),
}

SCHEMAS = {**RAW, **CORE, **QUALITY}

# the named findings of core/share_group_findings
SHARE_GROUP_FINDINGS = ("archived_unacknowledged", "partition_unassigned", "member_epoch_ahead", "share_state_unknown",
                        "simple_assignor_mismatch")
# the named findings of core/mm2_findings
MM2_FINDINGS = ("checkpoint_disagrees", "target_ahead_of_translation", "never_checkpointed")
# the named findings of core/streams_group_findings
STREAMS_GROUP_FINDINGS = ("active_task_held_twice", "active_task_unassigned", "standby_with_active",
                          "member_epoch_ahead", "member_unresponsive")

# core columns only some sources fill: a KRaft registry (null where the ZooKeeper registry
# builds the table); the Kafka-era states (null for ZooKeeper states)
_KAFKA_STATE = ("group_protocol", "generation", "offsets_partition", "log_offset")
ADDED_COLUMNS = {
    "core/brokers": ("rack", "fenced"),
    "core/topic_partitions": ("topic_id", "directories", "eligible_leader_replicas"),
    "core/rebalance_states": (*_KAFKA_STATE, "next_log_offset", "settled_log_offset"),
    "core/settled_audit": _KAFKA_STATE,
}
# core columns only the ZooKeeper-era states fill: a Kafka-era state (pipelines.spark.generations)
# is keyed by the record that began it, not by a zxid, and writes them null
ZOOKEEPER_STATE_COLUMNS = {
    "core/rebalance_states": ("state_zxid", "trigger_op", "trigger_path", "next_zxid", "settled_zxid"),
    "core/settled_audit": ("state_zxid", "owner_since", "held_until_zxid"),
}

# the ZooKeeper-era consumer's assignors kaudit recomputes (range is the default)
ZOOKEEPER_ASSIGNORS = ("range", "roundrobin")

# the named findings of core/consumer_group_findings (KIP-848 groups), in the report's order
CONSUMER_GROUP_FINDINGS = (
    "range_target_differs",
    "uniform_partition_untargeted",
    "uniform_partition_targeted_twice",
    "uniform_target_not_subscribed",
    "uniform_unbalanced",
    "epoch_order_violated",
    "partition_held_twice",
    "stable_member_off_target",
    "unresolved_topic_id",
)

# core/assignment_audit.status, in the contract's order of precedence (docs/contract.md) (the first that holds)
ASSIGNMENT_STATUSES = (
    "duplicate_owner",
    "unexpected_partition",
    "unknown_owner",
    "unowned",
    "wrong_owner",
    "ok",
)
# ... and in the order of the report's summary.json (CONTRACT)
SUMMARY_STATUS_ORDER = ("ok", "wrong_owner", "unowned", "duplicate_owner", "unknown_owner", "unexpected_partition")

# The latest record of a Kafka group in raw/group_metadata: the highest of these, compared in
# this order. A group's records live in one __consumer_offsets partition
# (GroupMetadataManager.partitionFor), so log order is log_offset; a tie across offsets
# partitions (after a partition-count change) goes to the higher offsets partition.
GROUP_RECORD_ORDER = ("log_offset", "offsets_partition")
