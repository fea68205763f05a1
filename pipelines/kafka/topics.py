"""Kafka's own topic names: which topics are internal, and which logs of a log dir hold no data
topic. No imports: the extractors and the Spark registry share these.

``INTERNAL_TOPICS`` is Kafka's ``org.apache.kafka.common.internals.Topic.INTERNAL_TOPICS``
(4.x: the group coordinator's, the transaction coordinator's and the share coordinator's
topics): what ``Topic.isInternal`` answers, and what a consumer's wildcard subscription never
matches (``exclude.internal.topics``; the ZooKeeper consumer's ``TopicFilter`` the same).
``__cluster_metadata`` is not among them: it is the KRaft controllers' Raft log, never a topic
in the metadata (so never matched either), but its ``__cluster_metadata-0`` dir can sit in a
log dir. ``__remote_log_metadata`` is an ordinary topic to Kafka (tiered storage's metadata,
consumed by the brokers only).
"""

OFFSETS_TOPIC = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state", "__share_group_state"})
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
# partition dirs of a log dir that no consumer group reads: the data-topic scan (log-end) skips them
NOT_DATA_TOPICS = INTERNAL_TOPICS | {CLUSTER_METADATA_TOPIC, REMOTE_LOG_METADATA_TOPIC}
