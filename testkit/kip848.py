"""An independent ENCODER of the KIP-848 (and share / streams) group records of
``__consumer_offsets`` (shares no code with ``pipelines/kafka``).

- Primitives: the ``kio`` package's serializers (``kio.serial.writers``), through
  ``testkit.kraft.Buf`` for the flexible values.
- Structs: assembled by hand, field by field, from Apache Kafka's
  ``group-coordinator/src/main/resources/common/message/ConsumerGroup*{Key,Value}.json``
  (copied in ``pipelines/kafka/schemas/``), ``ShareGroup*Value.json`` and
  ``StreamsGroup*Value.json`` (the commits in ``pipelines/kafka/schemas/STREAMS_SOURCES.md``).
- Keys: ``int16 type`` + non-flexible strings (int16 length); values: ``int16 version`` + the
  flexible struct. A tombstone is a null value (``None``).
- Batches: kafka-python's builders via ``testkit.segments.batch``.
"""

from __future__ import annotations

import io
import uuid

from kio.serial import writers as w

from testkit.kraft import Buf

STATES = {"STABLE": 0, "UNREVOKED_PARTITIONS": 1, "UNRELEASED_PARTITIONS": 2, "UNKNOWN": 127}


def key(key_type: int, *strings: str) -> bytes:
    b = io.BytesIO()
    w.write_int16(b, key_type)
    for s in strings:
        w.write_legacy_string(b, s)
    return b.getvalue()


def value(body: bytes, version: int = 0) -> bytes:
    b = io.BytesIO()
    w.write_int16(b, version)
    return b.getvalue() + body


def _topic_partitions(buf: Buf, item: tuple[uuid.UUID, list[int]]) -> None:
    buf.uuid(item[0]).int32s(item[1])


# --- 3: ConsumerGroupMetadata {GroupId} -> {Epoch} -------------------------------------------


def group_metadata(group: str, epoch: int | None) -> tuple[bytes, bytes | None]:
    return key(3, group), None if epoch is None else value(Buf().i32(epoch).done())


# --- 4: ConsumerGroupPartitionMetadata {GroupId} -> {Topics[{TopicId, TopicName, NumPartitions,
#        PartitionMetadata[{Partition, Racks[]}]}]} ------------------------------------------


def partition_metadata(
    group: str, topics: list[tuple[uuid.UUID, str, int]] | None, racks: dict[int, list[str]] | None = None
) -> tuple[bytes, bytes | None]:
    if topics is None:
        return key(4, group), None

    def rack(buf: Buf, item):
        p, names = item
        buf.i32(p)
        w.compact_array_writer(w.write_compact_string)(buf.b, names)

    def topic(buf: Buf, t):
        buf.uuid(t[0]).string(t[1]).i32(t[2]).structs(sorted((racks or {}).items()), rack)

    return key(4, group), value(Buf().structs(topics, topic).done())


# --- 5: ConsumerGroupMemberMetadata {GroupId, MemberId} -----------------------------------------


def member_metadata(
    group: str,
    member: str,
    *,
    instance_id: str | None = None,
    rack_id: str | None = None,
    client_id: str = "client",
    client_host: str = "/127.0.0.1",
    topics: list[str] | None = None,
    regex: str | None = None,
    rebalance_timeout_ms: int = 300000,
    assignor: str | None = "range",
    classic: tuple[int, list[tuple[str, bytes]]] | None = None,
    tombstone: bool = False,
) -> tuple[bytes, bytes | None]:
    """``classic``: (SessionTimeoutMs, [(Name, Metadata)]) written as tagged field 0."""
    k = key(5, group, member)
    if tombstone:
        return k, None
    b = Buf().string(instance_id).string(rack_id).string(client_id).string(client_host)
    w.compact_array_writer(w.write_compact_string)(b.b, topics or [])
    b.string(regex).i32(rebalance_timeout_ms).string(assignor)
    if classic is not None:

        def protocol(buf: Buf, item):
            buf.string(item[0]).compact_bytes(item[1])

        # a tagged nullable struct: uvarint 1 (not null), then the struct (MessageDataGenerator)
        inner = Buf().uvarint(1).i32(classic[0]).structs(classic[1], protocol).done()
        b.tag(0, lambda out, data: out.write(data), inner)
    return k, value(b.done())


# --- 6: ConsumerGroupTargetAssignmentMetadata {GroupId} -> {AssignmentEpoch} --------------------


def target_metadata(group: str, assignment_epoch: int | None) -> tuple[bytes, bytes | None]:
    return key(6, group), None if assignment_epoch is None else value(Buf().i32(assignment_epoch).done())


# --- 7: ConsumerGroupTargetAssignmentMember {GroupId, MemberId} -> {TopicPartitions[...]} -------


def target_member(group: str, member: str, partitions: dict[uuid.UUID, list[int]] | None) -> tuple[bytes, bytes | None]:
    k = key(7, group, member)
    if partitions is None:
        return k, None
    return k, value(Buf().structs(list(partitions.items()), _topic_partitions).done())


# --- 8: ConsumerGroupCurrentMemberAssignment {GroupId, MemberId} -------------------------------


def current_member(
    group: str,
    member: str,
    *,
    epoch: int = 1,
    previous_epoch: int = 0,
    state: str = "STABLE",
    assigned: dict[uuid.UUID, list[int]] | None = None,
    pending: dict[uuid.UUID, list[int]] | None = None,
    tombstone: bool = False,
) -> tuple[bytes, bytes | None]:
    k = key(8, group, member)
    if tombstone:
        return k, None
    b = Buf().i32(epoch).i32(previous_epoch).i8(STATES[state])
    b.structs(list((assigned or {}).items()), _topic_partitions).structs(
        list((pending or {}).items()), _topic_partitions
    )
    return k, value(b.done())


# --- 16: ConsumerGroupRegularExpression {GroupId, RegularExpression} -> {Topics[], Version, Timestamp}


def regular_expression(
    group: str, regex: str, topics: list[str] | None, *, version: int = 1, timestamp_ms: int = 0
) -> tuple[bytes, bytes | None]:
    k = key(16, group, regex)
    if topics is None:
        return k, None
    b = Buf()
    w.compact_array_writer(w.write_compact_string)(b.b, topics)
    return k, value(b.i64(version).i64(timestamp_ms).done())


# --- share groups (KIP-932) --------------------------------------------------------------------


def share_group_metadata(group: str, epoch: int) -> tuple[bytes, bytes]:
    """ShareGroupMetadata (type 11) -> {Epoch}."""
    return key(11, group), value(Buf().i32(epoch).done())


def share_member_metadata(
    group: str,
    member: str,
    topics: list[str],
    *,
    rack_id: str | None = None,
    client_id: str = "client",
    client_host: str = "/127.0.0.1",
) -> tuple[bytes, bytes]:
    """ShareGroupMemberMetadata (type 10) -> {RackId, ClientId, ClientHost, SubscribedTopicNames}."""
    b = Buf().string(rack_id).string(client_id).string(client_host)
    w.compact_array_writer(w.write_compact_string)(b.b, topics)
    return key(10, group, member), value(b.done())


def streams_record(key_type: int, group: str, member: str | None, body: bytes, version: int = 0) -> tuple[bytes, bytes]:
    """A streams group record (17-24) with the value body as given (e.g. one no schema reads)."""
    return key(key_type, group, *([member] if member is not None else [])), value(body, version)


# --- streams groups (KIP-1071): the StreamsGroup*Value.json of apache/kafka listed in
#     pipelines/kafka/schemas/STREAMS_SOURCES.md, field by field; keys {GroupId[, MemberId]} -------

Tasks = dict[str, list[int]]  # SubtopologyId -> Partitions


def _strings(buf: Buf, items: list[str]) -> Buf:
    w.compact_array_writer(w.write_compact_string)(buf.b, items)
    return buf


def _task_ids(buf: Buf, item: tuple[str, list[int]]) -> None:
    """TaskIds {SubtopologyId, Partitions[]}."""
    buf.string(item[0]).int32s(item[1])


def _tasks(buf: Buf, tasks: Tasks | None) -> Buf:
    return buf.structs(list((tasks or {}).items()), _task_ids)


def _key_values(buf: Buf, pairs: dict[str, str] | None) -> Buf:
    """[]{Key, Value} (AssignmentConfig, KeyValue, TopicConfig: two strings)."""
    return buf.structs(list((pairs or {}).items()), lambda b, kv: b.string(kv[0]).string(kv[1]))


def streams_group_metadata(
    group: str,
    epoch: int,
    metadata_hash: int,
    assignment_configs: dict[str, str],
    validated_topology_epoch: int | None = None,
) -> tuple[bytes, bytes]:
    """17: {Epoch int32, MetadataHash int64, AssignmentConfigs[]{Key, Value}} + tag 0
    ValidatedTopologyEpoch int32 (default -1)."""
    b = _key_values(Buf().i32(epoch).i64(metadata_hash), assignment_configs)
    if validated_topology_epoch is not None:
        b.tag(0, w.write_int32, validated_topology_epoch)
    return key(17, group), value(b.done())


def streams_partition_metadata(
    group: str, topics: list[tuple[uuid.UUID, str, int, dict[int, list[str]]]]
) -> tuple[bytes, bytes]:
    """18: {Topics[]{TopicId, TopicName, NumPartitions, PartitionMetadata[]{Partition, Racks[]}}}."""

    def topic(buf: Buf, t):
        buf.uuid(t[0]).string(t[1]).i32(t[2])
        buf.structs(sorted(t[3].items()), lambda b, pr: _strings(b.i32(pr[0]), pr[1]))

    return key(18, group), value(Buf().structs(topics, topic).done())


def streams_member_metadata(
    group: str,
    member: str,
    *,
    instance_id: str | None,
    rack_id: str | None,
    client_id: str,
    client_host: str,
    rebalance_timeout_ms: int,
    topology_epoch: int,
    process_id: str,
    user_endpoint: tuple[str, int] | None,
    client_tags: dict[str, str],
) -> tuple[bytes, bytes]:
    """19: {InstanceId?, RackId?, ClientId, ClientHost, RebalanceTimeoutMs, TopologyEpoch,
    ProcessId, UserEndpoint? {Host, Port uint16} (nullable struct: int8 -1 or 1 first),
    ClientTags[]{Key, Value}}."""
    b = Buf().string(instance_id).string(rack_id).string(client_id).string(client_host)
    b.i32(rebalance_timeout_ms).i32(topology_epoch).string(process_id)
    if user_endpoint is None:
        b.i8(-1)
    else:
        b.i8(1).raw(Buf().string(user_endpoint[0]).u16(user_endpoint[1]).done())
    return key(19, group, member), value(_key_values(b, client_tags).done())


def streams_target_metadata(group: str, assignment_epoch: int) -> tuple[bytes, bytes]:
    """20: {AssignmentEpoch}."""
    return key(20, group), value(Buf().i32(assignment_epoch).done())


def streams_target_member(group: str, member: str, active: Tasks, standby: Tasks, warmup: Tasks) -> tuple[bytes, bytes]:
    """21: {ActiveTasks, StandbyTasks, WarmupTasks: []TaskIds}."""
    b = _tasks(_tasks(_tasks(Buf(), active), standby), warmup)
    return key(21, group, member), value(b.done())


def streams_current_member(
    group: str,
    member: str,
    *,
    epoch: int,
    previous_epoch: int,
    state: int,
    tasks: tuple[Tasks, Tasks, Tasks],
    pending: tuple[Tasks, Tasks, Tasks],
) -> tuple[bytes, bytes]:
    """22: {MemberEpoch, PreviousMemberEpoch, State int8, Active/Standby/WarmupTasks,
    Active/Standby/WarmupTasksPendingRevocation: []TaskIds}."""
    b = Buf().i32(epoch).i32(previous_epoch).i8(state)
    for t in (*tasks, *pending):
        _tasks(b, t)
    return key(22, group, member), value(b.done())


def streams_topology(group: str, epoch: int, subtopologies: list[dict]) -> tuple[bytes, bytes]:
    """23: {Epoch, Subtopologies[]{SubtopologyId, SourceTopics[], SourceTopicRegex[],
    StateChangelogTopics[]TopicInfo, RepartitionSinkTopics[], RepartitionSourceTopics[]TopicInfo,
    CopartitionGroups[]{SourceTopics[]int16, SourceTopicRegex[]int16, RepartitionSourceTopics[]int16}}};
    TopicInfo {Name, Partitions int32, ReplicationFactor int16, TopicConfigs[]{key, value}}.
    A subtopology: dict(id, sources, regexes, changelogs, sinks, repartition_sources, copartition);
    a topic info: (name, partitions, replication factor, {config: value})."""

    def topic_info(buf: Buf, t):
        _key_values(buf.string(t[0]).i32(t[1]).i16(t[2]), t[3])

    def int16s(buf: Buf, items: list[int]) -> Buf:
        w.compact_array_writer(w.write_int16)(buf.b, items)
        return buf

    def copartition(buf: Buf, g):
        int16s(int16s(int16s(buf, g[0]), g[1]), g[2])

    def subtopology(buf: Buf, s):
        _strings(_strings(buf.string(s["id"]), s["sources"]), s["regexes"])
        _strings(buf.structs(s["changelogs"], topic_info), s["sinks"])
        buf.structs(s["repartition_sources"], topic_info).structs(s["copartition"], copartition)

    return key(23, group), value(Buf().i32(epoch).structs(subtopologies, subtopology).done())


def streams_resolved_topic_ids(
    group: str, assignment_epoch: int, by_subtopology: dict[str, list[uuid.UUID]]
) -> tuple[bytes, bytes]:
    """24: {AssignmentEpoch, ResolvedTopicIdsBySubtopology[]{SubtopologyId, TopicIds[]uuid}}."""
    b = Buf().i32(assignment_epoch)
    b.structs(list(by_subtopology.items()), lambda buf, it: buf.string(it[0]).uuids(it[1]))
    return key(24, group), value(b.done())
