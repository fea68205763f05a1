"""MirrorMaker 2's internal records as data: the offset syncs of ``mm2-offset-syncs.<alias>.internal``
and the checkpoints of ``<source>.checkpoints.internal``, one field table per record kind and
version, read by one decoder.

Sources: Apache Kafka ``connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSync.java``
(``KEY_SCHEMA``, ``VALUE_SCHEMA``) and ``connect/mirror-client/src/main/java/org/apache/kafka/
connect/mirror/Checkpoint.java`` (``KEY_SCHEMA``, ``HEADER_SCHEMA``, ``VALUE_SCHEMA_V0``); the
types are ``org.apache.kafka.common.protocol.types.Type`` (big-endian, non-nullable STRING);
the topic names are ``DefaultReplicationPolicy.offsetSyncsTopic``/``checkpointsTopic``.

Grammar (big-endian)::

    offset-sync key   = STRING topic, INT32 partition                   (the source partition)
    offset-sync value = INT64 upstreamOffset, INT64 offset              (offset: the downstream one)
    checkpoint key    = STRING group, STRING topic, INT32 partition     (topic: the renamed, target topic)
    checkpoint value  = INT16 version, then the struct of that version:
                        v0: INT64 upstreamOffset, INT64 offset, STRING metadata
    STRING            = INT16 length (0..32767) + UTF-8 bytes (a negative length is an error)

Nothing may follow a struct (MirrorMaker writes exactly one). A checkpoint value of a version
no table here knows is kept raw (its bytes in ``value``, the fields null) and said in the
quarantine, as are records whose bytes do not parse.
"""

from __future__ import annotations

import re
import struct

from pipelines.kafka.errors import DecodeError, UndecodableKey, UndecodableValue

OFFSET_SYNCS_TOPIC = re.compile(r"^mm2-offset-syncs\.(?P<alias>.+)\.internal$")
CHECKPOINTS_TOPIC = re.compile(r"^(?P<alias>.+)\.checkpoints\.internal$")

# (field name, type) in wire order
OFFSET_SYNC_KEY = (("topic", "string"), ("partition", "int32"))
OFFSET_SYNC_VALUE = (("upstream_offset", "int64"), ("downstream_offset", "int64"))
CHECKPOINT_KEY = (("group_id", "string"), ("topic", "string"), ("partition", "int32"))
CHECKPOINT_HEADER = (("version", "int16"),)
CHECKPOINT_VALUE = {0: (("upstream_offset", "int64"), ("downstream_offset", "int64"), ("metadata", "string"))}

_FIXED = {"int16": struct.Struct(">h"), "int32": struct.Struct(">i"), "int64": struct.Struct(">q")}


class UnknownCheckpointVersion(UndecodableValue):
    """A checkpoint value whose version header no field table here knows."""


def read_struct(buf: bytes, pos: int, fields: tuple, what: str, error: type[DecodeError]) -> tuple[dict, int]:
    """The fields of ``fields`` read from ``buf`` at ``pos``, and the position after them."""
    out = {}
    for name, kind in fields:
        if kind == "string":
            if pos + 2 > len(buf):
                raise error(f"{what}: ends at byte {len(buf)} before the length of {name}")
            n = _FIXED["int16"].unpack_from(buf, pos)[0]
            if n < 0:
                raise error(f"{what}: {name} has length {n} (a null string)")
            pos += 2
            if pos + n > len(buf):
                raise error(f"{what}: {name} of {n} bytes ends at byte {pos + n}, past the {len(buf)} bytes")
            try:
                out[name] = buf[pos : pos + n].decode("utf-8")
            except UnicodeDecodeError as err:
                raise error(f"{what}: {name} is not UTF-8 ({err.reason})") from None
            pos += n
        else:
            s = _FIXED[kind]
            if pos + s.size > len(buf):
                raise error(f"{what}: ends at byte {len(buf)} inside {name} ({kind})")
            out[name] = s.unpack_from(buf, pos)[0]
            pos += s.size
    return out, pos


def read_whole(buf: bytes | None, fields: tuple, what: str, error: type[DecodeError], pos: int = 0) -> dict:
    """``fields`` from ``buf``, which they must fill exactly."""
    if buf is None:
        raise error(f"{what}: null")
    out, end = read_struct(buf, pos, fields, what, error)
    if end != len(buf):
        raise error(f"{what}: {len(buf) - end} bytes follow the struct (of {len(buf)})")
    return out


def decode_offset_sync(key: bytes | None, value: bytes | None) -> dict:
    """{topic, partition, upstream_offset, downstream_offset} of one offset-sync record."""
    return {**read_whole(key, OFFSET_SYNC_KEY, "offset-sync key", UndecodableKey),
            **read_whole(value, OFFSET_SYNC_VALUE, "offset-sync value", UndecodableValue)}


def decode_checkpoint_key(key: bytes | None) -> dict:
    return read_whole(key, CHECKPOINT_KEY, "checkpoint key", UndecodableKey)


def decode_checkpoint_value(value: bytes | None) -> dict:
    """{value_version, upstream_offset, downstream_offset, metadata} of a checkpoint value;
    raises :class:`UnknownCheckpointVersion` (with the version read) for a version with no table."""
    if value is None:
        raise UndecodableValue("checkpoint value: null")
    header, pos = read_struct(value, 0, CHECKPOINT_HEADER, "checkpoint value header", UndecodableValue)
    version = header["version"]
    fields = CHECKPOINT_VALUE.get(version)
    if fields is None:
        err = UnknownCheckpointVersion(f"checkpoint value version {version}: known versions are "
                                       f"{sorted(CHECKPOINT_VALUE)}")
        err.version = version
        raise err
    return {"value_version": version, **read_whole(value, fields, f"checkpoint value v{version}", UndecodableValue,
                                                   pos)}
