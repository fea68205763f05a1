"""An independent ENCODER of the KIP-848 (and share / streams) group records of
``__consumer_offsets`` (shares no code with ``pipelines/kafka``).

- Primitives: the ``kio`` package's serializers (``kio.serial.writers``), through
  ``testkit.kraft.Buf`` for the flexible values.
- Structs: assembled by hand, field by field, from Apache Kafka's
  ``group-coordinator/src/main/resources/common/message/ConsumerGroup*{Key,Value}.json``
  (``../shared/schemas/kafka/group-coordinator/``) and ``ShareGroup*Value.json``.
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


def streams_record(key_type: int, group: str, member: str | None, body: bytes) -> tuple[bytes, bytes]:
    """A streams group record (17-24): its value is kept as bytes."""
    return key(key_type, group, *([member] if member is not None else [])), value(body)
