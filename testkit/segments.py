"""An independent ENCODER of ``__consumer_offsets`` segments, built on kafka-python.

Test data for the decoder in ``pipelines/kafka`` (shares no code with it):

- record keys/values with kafka-python's ``kafka.protocol`` Struct/Schema types, one schema
  per version, transcribed from Kafka's
  ``group-coordinator/src/main/resources/common/message/{OffsetCommitKey,OffsetCommitValue,
  GroupMetadataKey,GroupMetadataValue}.json`` and ``clients/.../ConsumerProtocol*.json``;
- batches with kafka-python's record builders (``DefaultRecordBatchBuilder`` for magic 2,
  ``LegacyRecordBatchBuilder`` for magic 0/1) and its codecs (``kafka.codec``). Where the
  builders lack a feature (broker-assigned base offsets, forced compression, control batches,
  absolute inner offsets of magic 0) the bytes are patched with kafka-python's low-level
  pieces and the CRC recomputed (``crc32c`` / ``zlib.crc32``); every magic-2 batch is parsed
  back by ``kafka.record.default_records.DefaultRecordBatch`` as a cross-check.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import crc32c
from kafka import codec as kcodec
from kafka.protocol.old.types import (
    Array,
    Bytes,
    CompactArray,
    CompactBytes,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
)
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from testkit.javahash import java_string_hash

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "snappy-plain": 2, "lz4": 3, "zstd": 4}

# --- record keys -----------------------------------------------------------------------------

OFFSET_COMMIT_KEY = Schema(("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
GROUP_METADATA_KEY = Schema(("group", String("utf-8")))

# --- OffsetCommitValue v0-v4 -----------------------------------------------------------------

OFFSET_COMMIT_VALUE = {
    0: Schema(("offset", Int64), ("metadata", String("utf-8")), ("timestamp", Int64)),
    1: Schema(
        ("offset", Int64), ("metadata", String("utf-8")), ("commit_timestamp", Int64), ("expire_timestamp", Int64)
    ),
    2: Schema(("offset", Int64), ("metadata", String("utf-8")), ("commit_timestamp", Int64)),
    3: Schema(("offset", Int64), ("leader_epoch", Int32), ("metadata", String("utf-8")), ("commit_timestamp", Int64)),
    4: Schema(
        ("offset", Int64),
        ("leader_epoch", Int32),
        ("metadata", CompactString("utf-8")),
        ("commit_timestamp", Int64),
        ("tags", TaggedFields),
    ),
}

# --- GroupMetadataValue v0-v4 ----------------------------------------------------------------


def _member_schema(version: int) -> Schema:
    flexible = version >= 4
    s = CompactString("utf-8") if flexible else String("utf-8")
    b = CompactBytes if flexible else Bytes
    fields = [("member_id", s)]
    if version >= 3:
        fields.append(("group_instance_id", s))
    fields += [("client_id", s), ("client_host", s)]
    if version >= 1:
        fields.append(("rebalance_timeout", Int32))
    fields += [("session_timeout", Int32), ("subscription", b), ("assignment", b)]
    if flexible:
        fields.append(("tags", TaggedFields))
    return Schema(*fields)


def _group_value_schema(version: int) -> Schema:
    flexible = version >= 4
    s = CompactString("utf-8") if flexible else String("utf-8")
    arr = CompactArray if flexible else Array
    fields = [("protocol_type", s), ("generation", Int32), ("protocol", s), ("leader", s)]
    if version >= 2:
        fields.append(("current_state_timestamp", Int64))
    fields.append(("members", arr(_member_schema(version))))
    if flexible:
        fields.append(("tags", TaggedFields))
    return Schema(*fields)


GROUP_METADATA_VALUE = {v: _group_value_schema(v) for v in range(5)}

# --- ConsumerProtocol Subscription / Assignment v0-v3 ---------------------------------------

_TOPIC_PARTITIONS = Array(("topic", String("utf-8")), ("partitions", Array(Int32)))


def _subscription_schema(version: int) -> Schema:
    fields = [("topics", Array(String("utf-8"))), ("user_data", Bytes)]
    if version >= 1:
        fields.append(("owned_partitions", _TOPIC_PARTITIONS))
    if version >= 2:
        fields.append(("generation_id", Int32))
    if version >= 3:
        fields.append(("rack_id", String("utf-8")))
    return Schema(*fields)


SUBSCRIPTION = {v: _subscription_schema(v) for v in range(4)}
ASSIGNMENT = Schema(("assigned_partitions", _TOPIC_PARTITIONS), ("user_data", Bytes))  # v0-v3 alike


def offset_commit_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return Int16.encode(version) + OFFSET_COMMIT_KEY.encode([group, topic, partition])


def offset_commit_value(
    offset: int,
    *,
    metadata: str = "",
    commit_ts: int,
    expire_ts: int | None = None,
    leader_epoch: int = -1,
    version: int = 3,
    tags: dict[int, bytes] | None = None,
) -> bytes:
    if version == 0:
        item = [offset, metadata, commit_ts]
    elif version == 1:
        item = [offset, metadata, commit_ts, -1 if expire_ts is None else expire_ts]
    elif version == 2:
        item = [offset, metadata, commit_ts]
    elif version == 3:
        item = [offset, leader_epoch, metadata, commit_ts]
    elif version == 4:
        item = [offset, leader_epoch, metadata, commit_ts, tags or {}]
    else:
        raise ValueError(f"OffsetCommitValue v{version} is unknown")
    return Int16.encode(version) + OFFSET_COMMIT_VALUE[version].encode(item)


def group_metadata_key(group: str) -> bytes:
    return Int16.encode(2) + GROUP_METADATA_KEY.encode([group])


def group_metadata_value(
    *,
    protocol_type: str = "consumer",
    generation: int,
    protocol: str | None,
    leader: str | None,
    state_ts: int | None = None,
    members: list[dict] = (),
    version: int = 3,
) -> bytes:
    rows = []
    for m in members:
        row = [m["member_id"]]
        if version >= 3:
            row.append(m.get("group_instance_id"))
        row += [m["client_id"], m["client_host"]]
        if version >= 1:
            row.append(m.get("rebalance_timeout", 300000))
        row += [m.get("session_timeout", 45000), m["subscription"], m["assignment"]]
        if version >= 4:
            row.append({})
        rows.append(row)
    item = [protocol_type, generation, protocol, leader]
    if version >= 2:
        item.append(-1 if state_ts is None else state_ts)
    item.append(rows)
    if version >= 4:
        item.append({})
    return Int16.encode(version) + GROUP_METADATA_VALUE[version].encode(item)


def subscription(
    topics: list[str],
    *,
    version: int = 0,
    owned: dict[str, list[int]] | None = None,
    generation: int = -1,
    rack: str | None = None,
    user_data: bytes | None = None,
) -> bytes:
    item: list = [list(topics), user_data]
    if version >= 1:
        item.append([[t, list(ps)] for t, ps in (owned or {}).items()])
    if version >= 2:
        item.append(generation)
    if version >= 3:
        item.append(rack)
    schema = SUBSCRIPTION[min(version, 3)]
    return Int16.encode(version) + schema.encode(item)


def assignment(partitions: dict[str, list[int]], *, version: int = 0, user_data: bytes | None = None) -> bytes:
    return Int16.encode(version) + ASSIGNMENT.encode([[[t, list(ps)] for t, ps in partitions.items()], user_data])


# --- batches ---------------------------------------------------------------------------------

_V2_HEADER = DefaultRecordBatchBuilder.HEADER_STRUCT  # same layout kafka-python reads
_V2_ATTR_OFFSET = DefaultRecordBatchBuilder.ATTRIBUTES_OFFSET  # 21
_V2_CRC_OFFSET = DefaultRecordBatchBuilder.CRC_OFFSET  # 17


def _compress(codec: str, data: bytes, magic: int) -> bytes:
    if codec == "gzip":
        return kcodec.gzip_encode(data)
    if codec == "snappy":
        return kcodec.snappy_encode(data, xerial_compatible=True)
    if codec == "snappy-plain":
        return kcodec.snappy_encode(data, xerial_compatible=False)
    if codec == "lz4":
        return kcodec.lz4_encode_old_kafka(data) if magic == 0 else kcodec.lz4_encode(data)
    if codec == "zstd":
        return kcodec.zstd_encode(data)
    raise ValueError(codec)


def _v2_finish(buf: bytearray, *, base_offset: int, attributes: int, leader_epoch: int = 0) -> bytes:
    """Set broker-assigned fields and attributes, fix the length and the CRC-32C."""
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">i", buf, 12, leader_epoch)
    struct.pack_into(">h", buf, _V2_ATTR_OFFSET, attributes)
    struct.pack_into(">I", buf, _V2_CRC_OFFSET, crc32c.crc32c(bytes(buf[_V2_ATTR_OFFSET:])))
    out = bytes(buf)
    check = DefaultRecordBatch(out)  # kafka-python parses it back
    assert check.base_offset == base_offset and check.validate_crc(), "kafka-python rejects the batch"
    return out


def batch(
    records: list[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int,
    magic: int = 2,
    codec: str = "none",
    timestamp_ms: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    timestamps: list[int] | None = None,
) -> bytes:
    """One batch (magic 2) or message set (magic 0/1) holding ``records`` at offsets
    ``base_offset, base_offset+1, ...``. ``codec`` is always applied (no fallback)."""
    if not records:
        raise ValueError("a batch holds at least one record")
    ts = timestamps or [timestamp_ms] * len(records)
    if magic == 2:
        if transactional and producer_id < 0:
            raise ValueError("a transactional batch needs a producer id")
        b = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=transactional,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            batch_size=1 << 30,
        )
        for i, (k, v) in enumerate(records):
            b.append(i, ts[i], k, v, [])
        buf = b.build()
        attributes = struct.unpack_from(">h", buf, _V2_ATTR_OFFSET)[0] & ~0x07
        if codec != "none":
            header = bytes(buf[: _V2_HEADER.size])
            buf = bytearray(header + _compress(codec, bytes(buf[_V2_HEADER.size :]), 2))
            attributes |= CODECS[codec]
        return _v2_finish(bytearray(buf), base_offset=base_offset, attributes=attributes)

    if magic not in (0, 1):
        raise ValueError(f"magic {magic}")
    if codec == "zstd":
        raise ValueError("zstd needs magic 2")
    n = len(records)
    if codec == "none":
        b = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
        for i, (k, v) in enumerate(records):
            b.append(base_offset + i, ts[i], k, v)
        return bytes(b.build())
    # Compressed: inner set (absolute offsets for magic 0, relative 0..n-1 for magic 1) is the
    # value of one wrapper message whose offset is the absolute offset of the last inner one.
    inner = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
    for i, (k, v) in enumerate(records):
        inner.append((base_offset + i) if magic == 0 else i, ts[i], k, v)
    payload = _compress(codec, bytes(inner.build()), magic)
    wrapper = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
    wrapper.append(0, max(ts), None, payload)
    buf = bytearray(wrapper.build())
    buf[17] = (buf[17] & ~0x07) | CODECS[codec]  # attributes
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])) & 0xFFFFFFFF)
    struct.pack_into(">q", buf, 0, base_offset + n - 1)
    out = bytes(buf)
    check = LegacyRecordBatch(out, magic)
    assert check.validate_crc(), "kafka-python rejects the wrapper"
    return out


def control_batch(
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    timestamp_ms: int,
    coordinator_epoch: int = 0,
) -> bytes:
    """A transaction marker: isControl + isTransactional, one record (key version 0, type
    0 ABORT / 1 COMMIT; value version 0, coordinatorEpoch)."""
    key = Int16.encode(0) + Int16.encode(1 if commit else 0)
    value = Int16.encode(0) + Int32.encode(coordinator_epoch)
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    b.append(0, timestamp_ms, key, value, [])
    buf = b.build()
    out = _v2_finish(bytearray(buf), base_offset=base_offset, attributes=0x10 | 0x20)
    assert DefaultRecordBatch(out).is_control_batch
    return out


def write_segment(path: str | Path, batches: list[bytes]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(batches))


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def group_partition(group: str, num_partitions: int = 50) -> int:
    """``Utils.abs(groupId.hashCode) % n`` (Kafka's abs maps MIN_VALUE to 0)."""
    h = java_string_hash(group)
    a = 0 if h == -(1 << 31) else abs(h)
    return a % num_partitions
