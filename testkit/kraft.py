"""An independent ENCODER of KRaft metadata logs and snapshots (shares no code with
``pipelines/kraft``).

- Primitives: the ``kio`` package's serializers (``kio.serial.writers``: compact strings,
  unsigned varints, tagged fields, UUIDs, fixed-width ints).
- Structs: assembled by hand, field by field, from Apache Kafka's
  ``metadata/src/main/resources/common/metadata/*.json`` (copied in ``pipelines/kraft/schemas/``)
  and the Raft control records of ``clients/src/main/resources/common/message/``
  (LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord, KRaftVersionRecord,
  VotersRecord).
- Frame (``AbstractApiMessageSerde``): uvarint frame version 1, uvarint apiKey, uvarint version.
- Batches: kafka-python's ``DefaultRecordBatchBuilder`` (via ``testkit.segments``); control
  batches get the control attribute and their ``int16 version, int16 type`` key.
"""

from __future__ import annotations

import base64
import io
import struct
import uuid
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kio.serial import writers as w

from testkit.segments import _v2_finish, batch

# --- primitives ------------------------------------------------------------------------------


class Buf:
    """A struct being written with kio's serializers."""

    def __init__(self):
        self.b = io.BytesIO()
        self.tags: list[tuple[int, callable, object]] = []

    def i8(self, v):
        return self._put(w.write_int8, v)

    def i16(self, v):
        return self._put(w.write_int16, v)

    def u16(self, v):
        return self._put(w.write_uint16, v)

    def i32(self, v):
        return self._put(w.write_int32, v)

    def i64(self, v):
        return self._put(w.write_int64, v)

    def boolean(self, v):
        return self._put(w.write_boolean, v)

    def uuid(self, v: uuid.UUID):
        return self._put(w.write_uuid, v)

    def string(self, v):
        return self._put(w.write_nullable_compact_string, v)

    def uvarint(self, v):
        return self._put(w.write_unsigned_varint, v)

    def compact_bytes(self, v: bytes):
        """Compact bytes: unsigned varint length + 1, then the bytes (kio writes the varint)."""
        w.write_unsigned_varint(self.b, len(v) + 1)
        self.b.write(v)
        return self

    def _put(self, writer, value):
        writer(self.b, value)
        return self

    def int32s(self, items):
        w.compact_array_writer(w.write_int32)(self.b, items)
        return self

    def uuids(self, items):
        w.compact_array_writer(w.write_uuid)(self.b, items)
        return self

    def structs(self, items, write_item):
        """A compact array of structs; ``write_item(Buf, item)`` writes one (tags included)."""
        if items is None:
            w.write_compact_array_length(self.b, None)
            return self
        w.write_compact_array_length(self.b, len(items))
        for item in items:
            inner = Buf()
            write_item(inner, item)
            self.b.write(inner.done())
        return self

    def tag(self, tag: int, writer, value):
        """A tagged field, written at the end (kio's ``write_tagged_field``)."""
        self.tags.append((tag, writer, value))
        return self

    def raw(self, data: bytes):
        self.b.write(data)
        return self

    def done(self) -> bytes:
        """The struct's bytes, with its tagged-field section."""
        w.write_unsigned_varint(self.b, len(self.tags))
        for tag, writer, value in sorted(self.tags, key=lambda t: t[0]):
            w.write_tagged_field(self.b, tag, writer, value)
        return self.b.getvalue()


def frame(api_key: int, version: int, body: bytes) -> bytes:
    head = io.BytesIO()
    for v in (1, api_key, version):
        w.write_unsigned_varint(head, v)
    return head.getvalue() + body


def uuid_text(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(), computed here independently: URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def topic_uuid(n: int) -> uuid.UUID:
    return uuid.UUID(int=(0x5EED << 96) | n)


_i32s = w.compact_array_writer(w.write_int32)
_uuids = w.compact_array_writer(w.write_uuid)

# --- metadata records (apiKey, versions) ------------------------------------------------------


def register_broker(broker_id: int, *, version: int = 3, epoch: int = 10, host: str = "127.0.0.1", port: int = 9092,
                    rack: str | None = None, fenced: bool = True, in_controlled_shutdown: bool = False,
                    log_dirs: list[uuid.UUID] | None = None, incarnation: uuid.UUID | None = None,
                    cordoned_log_dirs: list[uuid.UUID] | None = None) -> bytes:
    """RegisterBrokerRecord (apiKey 0) v0-v4 (v4: the tagged, nullable CordonedLogDirs, tag 1)."""
    b = Buf().i32(broker_id)
    if version >= 2:
        b.boolean(False)  # IsMigratingZkBroker
    b.uuid(incarnation or uuid.UUID(int=broker_id + 1)).i64(epoch)

    def endpoint(e: Buf, item):
        e.string(item[0]).string(item[1]).u16(item[2]).i16(0)

    def feature(f: Buf, item):
        f.string(item[0]).i16(item[1]).i16(item[2])

    b.structs([("PLAINTEXT", host, port)], endpoint)
    b.structs([("metadata.version", 1, 25)], feature)
    b.string(rack).boolean(fenced)
    if version >= 1:
        b.boolean(in_controlled_shutdown)
    if version >= 3 and log_dirs is not None:
        b.tag(0, _uuids, log_dirs)
    if version >= 4 and cordoned_log_dirs is not None:
        b.tag(1, _uuids, cordoned_log_dirs)
    return frame(0, version, b.done())


def unregister_broker(broker_id: int, epoch: int = 10) -> bytes:
    return frame(1, 0, Buf().i32(broker_id).i64(epoch).done())


def topic(name: str, topic_id: uuid.UUID) -> bytes:
    return frame(2, 0, Buf().string(name).uuid(topic_id).done())


def partition(topic_id: uuid.UUID, pid: int, replicas: list[int], *, version: int = 0, isr: list[int] | None = None,
              leader: int | None = None, leader_epoch: int = 0, partition_epoch: int = 0,
              directories: list[uuid.UUID] | None = None, elr: list[int] | None = None,
              last_known_elr: list[int] | None = None, leader_recovery_state: int | None = None) -> bytes:
    """PartitionRecord (apiKey 3) v0-v2."""
    isr = replicas if isr is None else isr
    b = Buf().i32(pid).uuid(topic_id).int32s(replicas).int32s(isr).int32s([]).int32s([])
    b.i32(replicas[0] if leader is None else leader)
    if leader_recovery_state is not None:
        b.tag(0, w.write_int8, leader_recovery_state)
    b.i32(leader_epoch).i32(partition_epoch)
    if version >= 1:
        b.uuids(directories or [uuid.UUID(int=0)] * len(replicas))
    if version >= 2:
        if elr is not None:
            b.tag(1, _i32s, elr)
        if last_known_elr is not None:
            b.tag(2, _i32s, last_known_elr)
    return frame(3, version, b.done())


def config(resource_type: int, resource: str, name: str, value: str | None) -> bytes:
    return frame(4, 0, Buf().i8(resource_type).string(resource).string(name).string(value).done())


def user_scram_credential(name: str, mechanism: int, salt: bytes, stored_key: bytes, server_key: bytes,
                          iterations: int) -> bytes:
    """UserScramCredentialRecord (apiKey 11) v0."""
    b = Buf().string(name).i8(mechanism).compact_bytes(salt).compact_bytes(stored_key).compact_bytes(server_key)
    return frame(11, 0, b.i32(iterations).done())


def remove_user_scram_credential(name: str, mechanism: int) -> bytes:
    """RemoveUserScramCredentialRecord (apiKey 22) v0."""
    return frame(22, 0, Buf().string(name).i8(mechanism).done())


def access_control_entry(acl_id: uuid.UUID, resource_type: int, resource: str, pattern_type: int, principal: str,
                         host: str, operation: int, permission: int) -> bytes:
    """AccessControlEntryRecord (apiKey 18) v0."""
    b = Buf().uuid(acl_id).i8(resource_type).string(resource).i8(pattern_type).string(principal).string(host)
    return frame(18, 0, b.i8(operation).i8(permission).done())


def remove_access_control_entry(acl_id: uuid.UUID) -> bytes:
    """RemoveAccessControlEntryRecord (apiKey 19) v0."""
    return frame(19, 0, Buf().uuid(acl_id).done())


def delegation_token(owner: str, requester: str, renewers: list[str], issued: int, max_ts: int, expires: int,
                     token_id: str) -> bytes:
    """DelegationTokenRecord (apiKey 10) v0."""
    b = Buf().string(owner).string(requester)
    w.compact_array_writer(w.write_compact_string)(b.b, renewers)
    return frame(10, 0, b.i64(issued).i64(max_ts).i64(expires).string(token_id).done())


def remove_delegation_token(token_id: str) -> bytes:
    """RemoveDelegationTokenRecord (apiKey 26) v0."""
    return frame(26, 0, Buf().string(token_id).done())


def client_quota(entity: list[tuple[str, str | None]], key: str, value: float, remove: bool = False) -> bytes:
    """ClientQuotaRecord (apiKey 14) v0: Entity [{EntityType, EntityName (nullable)}], Key,
    Value float64, Remove."""
    b = Buf().structs(entity, lambda e, it: e.string(it[0]).string(it[1]))
    return frame(14, 0, b.string(key)._put(w.write_float64, value).boolean(remove).done())


def zk_migration_state(state: int) -> bytes:
    """ZkMigrationStateRecord (apiKey 21) v0."""
    return frame(21, 0, Buf().i8(state).done())


def partition_change(topic_id: uuid.UUID, pid: int, *, version: int = 0, isr=None, leader=None, replicas=None,
                     removing=None, adding=None, leader_recovery_state=None, elr=None, last_known_elr=None,
                     directories=None) -> bytes:
    """PartitionChangeRecord (apiKey 5) v0-v2: every delta is a tagged field."""
    b = Buf().i32(pid).uuid(topic_id)
    for tag, writer, value, since in ((0, _i32s, isr, 0), (1, w.write_int32, leader, 0), (2, _i32s, replicas, 0),
                                      (3, _i32s, removing, 0), (4, _i32s, adding, 0),
                                      (5, w.write_int8, leader_recovery_state, 0), (6, _i32s, elr, 2),
                                      (7, _i32s, last_known_elr, 2), (8, _uuids, directories, 1)):
        if value is not None and version >= since:
            b.tag(tag, writer, value)
    return frame(5, version, b.done())


def fence_broker(broker_id: int, epoch: int = 10) -> bytes:
    return frame(7, 0, Buf().i32(broker_id).i64(epoch).done())


def unfence_broker(broker_id: int, epoch: int = 10) -> bytes:
    return frame(8, 0, Buf().i32(broker_id).i64(epoch).done())


def remove_topic(topic_id: uuid.UUID) -> bytes:
    return frame(9, 0, Buf().uuid(topic_id).done())


def feature_level(name: str, level: int) -> bytes:
    return frame(12, 0, Buf().string(name).i16(level).done())


def producer_ids(broker_id: int, epoch: int, next_id: int) -> bytes:
    return frame(15, 0, Buf().i32(broker_id).i64(epoch).i64(next_id).done())


def broker_registration_change(broker_id: int, *, version: int = 0, epoch: int = 10, fenced: int | None = None,
                               in_controlled_shutdown: int | None = None, log_dirs=None,
                               cordoned_log_dirs=None) -> bytes:
    """BrokerRegistrationChangeRecord (apiKey 17) v0-v3 (v3: the tagged, nullable
    CordonedLogDirs, tag 3)."""
    b = Buf().i32(broker_id).i64(epoch)
    if fenced is not None:
        b.tag(0, w.write_int8, fenced)
    if in_controlled_shutdown is not None and version >= 1:
        b.tag(1, w.write_int8, in_controlled_shutdown)
    if log_dirs is not None and version >= 2:
        b.tag(2, _uuids, log_dirs)
    if cordoned_log_dirs is not None and version >= 3:
        b.tag(3, _uuids, cordoned_log_dirs)
    return frame(17, version, b.done())


def no_op() -> bytes:
    return frame(20, 0, Buf().done())


def begin_transaction(name: str | None = None) -> bytes:
    b = Buf()
    if name is not None:
        b.tag(0, w.write_nullable_compact_string, name)
    return frame(23, 0, b.done())


def end_transaction() -> bytes:
    return frame(24, 0, Buf().done())


def abort_transaction(reason: str | None = None) -> bytes:
    b = Buf()
    if reason is not None:
        b.tag(0, w.write_nullable_compact_string, reason)
    return frame(25, 0, b.done())


def register_controller(controller_id: int, host: str = "127.0.0.1", port: int = 9093) -> bytes:
    b = Buf().i32(controller_id).uuid(uuid.UUID(int=1000 + controller_id)).boolean(False)
    b.structs([("CONTROLLER", host, port)], lambda e, it: e.string(it[0]).string(it[1]).u16(it[2]).i16(0))
    b.structs([("kraft.version", 0, 1)], lambda f, it: f.string(it[0]).i16(it[1]).i16(it[2]))
    return frame(27, 0, b.done())


def clear_elr(topic_name: str) -> bytes:
    return frame(28, 0, Buf().string(topic_name).done())


# --- control records (value without frame; key int16 version, int16 type) --------------------


def leader_change(leader: int, voters: list[int]) -> tuple[int, bytes]:
    def voter(v: Buf, vid: int):
        v.i32(vid)

    return 2, Buf().i16(0).i32(leader).structs(voters, voter).structs(voters, voter).done()


def snapshot_header(last_contained_ts: int) -> tuple[int, bytes]:
    return 3, Buf().i16(0).i64(last_contained_ts).done()


def snapshot_footer() -> tuple[int, bytes]:
    return 4, Buf().i16(0).done()


def kraft_version(level: int) -> tuple[int, bytes]:
    return 5, Buf().i16(0).i16(level).done()


def voters(ids: list[int]) -> tuple[int, bytes]:
    def voter(v: Buf, vid):
        v.i32(vid).uuid(uuid.UUID(int=2000 + vid))
        v.structs([("CONTROLLER", "127.0.0.1", 9093)], lambda e, it: e.string(it[0]).string(it[1]).u16(it[2]))
        v.raw(Buf().i16(0).i16(1).done())  # KRaftVersionFeature: an inline struct

    return 6, Buf().i16(0).structs(ids, voter).done()


# --- batches and files -----------------------------------------------------------------------


def metadata_batch(values: list[bytes], *, base_offset: int, timestamp_ms: int) -> bytes:
    """One batch of metadata records (null keys, no headers), kafka-python's builder."""
    return batch([(None, v) for v in values], base_offset=base_offset, timestamp_ms=timestamp_ms)


def control_batch(record: tuple[int, bytes], *, base_offset: int, timestamp_ms: int) -> bytes:
    ctype, value = record
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    b.append(0, timestamp_ms, struct.pack(">hh", 0, ctype), value, [])
    out = _v2_finish(bytearray(b.build()), base_offset=base_offset, attributes=0x20)
    assert DefaultRecordBatch(out).is_control_batch
    return out


class Log:
    """A metadata log being written: batches at consecutive offsets, one timestamp each."""

    def __init__(self, start_offset: int = 0, start_ms: int = 1_750_000_000_000):
        self.next_offset = start_offset
        self.now = start_ms
        self.batches: list[bytes] = []

    def append(self, *values: bytes) -> int:
        """One batch of metadata records; returns the offset of its last record."""
        self.now += 1000
        self.batches.append(metadata_batch(list(values), base_offset=self.next_offset, timestamp_ms=self.now))
        self.next_offset += len(values)
        return self.next_offset - 1

    def control(self, record: tuple[int, bytes]) -> int:
        self.now += 1000
        self.batches.append(control_batch(record, base_offset=self.next_offset, timestamp_ms=self.now))
        self.next_offset += 1
        return self.next_offset - 1

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(self.batches))
        return path


def snapshot_bytes(values: list[bytes], *, last_contained_ts: int, batch_size: int = 100) -> bytes:
    """A snapshot: header control batch, the image's records, footer control batch (offsets
    from 0, as RecordsSnapshotWriter writes them)."""
    out = [control_batch(snapshot_header(last_contained_ts), base_offset=0, timestamp_ms=last_contained_ts)]
    offset = 1
    for i in range(0, len(values), batch_size):
        chunk = values[i : i + batch_size]
        out.append(metadata_batch(chunk, base_offset=offset, timestamp_ms=last_contained_ts))
        offset += len(chunk)
    out.append(control_batch(snapshot_footer(), base_offset=offset, timestamp_ms=last_contained_ts))
    return b"".join(out)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def snapshot_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"
