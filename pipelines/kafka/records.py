"""``__consumer_offsets`` record keys and values as data: one field table per record kind,
with the versions of each field, read by one decoder.

Source: Apache Kafka ``group-coordinator/src/main/resources/common/message/`` -
``OffsetCommitKey.json``, ``OffsetCommitValue.json``, ``GroupMetadataKey.json``,
``GroupMetadataValue.json`` (and the KIP-848/932/1071 ``*Key.json`` files whose first field is
``GroupId``); ``clients/src/main/resources/common/message/ConsumerProtocolSubscription.json``
and ``ConsumerProtocolAssignment.json``.

Grammar (``org.apache.kafka.common.protocol``)::

    record key   = int16 type,    struct of that type's key     (never flexible)
    record value = int16 version, struct of that version         (null value = tombstone)
    non-flexible: string = int16 len + utf8 (-1 null), bytes = int32 len (-1 null),
                  array  = int32 count (-1 null)
    flexible:     compact string/bytes/array = uvarint(len + 1) (0 null), and every struct
                  ends with tagged fields: uvarint count, then (uvarint tag, uvarint size, data)

The tables here are expanded per version (:meth:`Message.layout`), interpreted by
:func:`decode` for nested records (group metadata, ConsumerProtocol), and compiled by
:func:`compile_ops` into the op tables the numba kernel ``decode_flat`` reads for the hot flat
records (keys, OffsetCommitValue).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

import numpy as np

from pipelines.kafka import kernel_tables as K
from pipelines.kafka.errors import DecodeError


@dataclass(frozen=True)
class ArrayOf:
    item: str | Struct


@dataclass(frozen=True)
class Field:
    name: str
    type: str | ArrayOf  # int8 int16 int32 int64 uuid string bytes, or ArrayOf(...)
    versions: str  # "0+", "3+", "1", "1-3"
    default: object = None
    tag: int | None = None  # a tagged field (flexible versions): read from the tagged section


@dataclass(frozen=True)
class Struct:
    fields: tuple[Field, ...]


def _in(versions: str, v: int) -> bool:
    if versions == "none":
        return False
    if versions.endswith("+"):
        return v >= int(versions[:-1])
    lo, _, hi = versions.partition("-")
    return int(lo) <= v <= int(hi or lo)


@dataclass(frozen=True)
class Message:
    name: str
    valid: str  # "0-4"
    flexible: str  # "4+" or "none"
    body: Struct
    prefix_of_newer: bool = False  # a newer version keeps the fields of the newest known one

    @property
    def max_version(self) -> int:
        return int(self.valid.rpartition("-")[2])

    @property
    def min_version(self) -> int:
        return int(self.valid.partition("-")[0])

    def is_flexible(self, v: int) -> bool:
        return _in(self.flexible, v)

    def layout(self, v: int) -> list[Field]:
        """The untagged fields of version ``v``, in order."""
        return [f for f in self.body.fields if _in(f.versions, v) and f.tag is None]

    def tagged(self, v: int) -> dict[int, Field]:
        return {f.tag: f for f in self.body.fields if _in(f.versions, v) and f.tag is not None}


# --- record keys -----------------------------------------------------------------------------

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    "0-1",
    "none",
    Struct((Field("group", "string", "0+"), Field("topic", "string", "0+"), Field("partition", "int32", "0+"))),
)
GROUP_METADATA_KEY = Message("GroupMetadataKey", "2", "none", Struct((Field("group", "string", "0+"),)))
# KIP-848 (3-8), KIP-932 (9-15), 16 (regex), KIP-1071 (17-24): every key starts with GroupId.
GROUP_PREFIXED_KEY = Message("CoordinatorKey", "3-24", "none", Struct((Field("group", "string", "0+"),)))

# the whole keys of the KIP-848/932/1071 records (``pipelines.kafka.groups``): GroupId, then
# MemberId where the key has one (``ConsumerGroupRegularExpressionKey``: RegularExpression)
GROUP_MEMBER_KEY = Message(
    "CoordinatorMemberKey", "3-24", "none", Struct((Field("group", "string", "0+"), Field("member_id", "string", "0+")))
)
REGULAR_EXPRESSION_KEY = Message(
    "ConsumerGroupRegularExpressionKey",
    "16",
    "none",
    Struct((Field("group", "string", "0+"), Field("regular_expression", "string", "0+"))),
)

KEY_BY_TYPE = {0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY, 2: GROUP_METADATA_KEY} | {
    t: GROUP_PREFIXED_KEY for t in range(3, 25)
}

# --- OffsetCommitValue -----------------------------------------------------------------------

OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    Struct(
        (
            Field("offset", "int64", "0+"),
            Field("leader_epoch", "int32", "3+", -1),
            Field("metadata", "string", "0+"),
            Field("commit_timestamp", "int64", "0+"),
            Field("expire_timestamp", "int64", "1", -1),
            Field("topic_id", "uuid", "4+", tag=0),  # Kafka 4.1 (KIP-848 commits by topic id)
        )
    ),
)

# --- GroupMetadataValue (classic protocol) ----------------------------------------------------

MEMBER_METADATA = Struct(
    (
        Field("member_id", "string", "0+"),
        Field("group_instance_id", "string", "3+"),
        Field("client_id", "string", "0+"),
        Field("client_host", "string", "0+"),
        Field("rebalance_timeout", "int32", "1+"),
        Field("session_timeout", "int32", "0+"),
        Field("subscription", "bytes", "0+"),
        Field("assignment", "bytes", "0+"),
    )
)
GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    Struct(
        (
            Field("protocol_type", "string", "0+"),
            Field("generation", "int32", "0+"),
            Field("protocol", "string", "0+"),
            Field("leader", "string", "0+"),
            Field("current_state_timestamp", "int64", "2+", -1),
            Field("members", ArrayOf(MEMBER_METADATA), "0+"),
        )
    ),
)

# --- ConsumerProtocol (embedded protocol of protocol_type 'consumer') -------------------------

TOPIC_PARTITION = Struct((Field("topic", "string", "0+"), Field("partitions", ArrayOf("int32"), "0+")))
CONSUMER_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    Struct(
        (
            Field("topics", ArrayOf("string"), "0+"),
            Field("user_data", "bytes", "0+"),
            Field("owned_partitions", ArrayOf(TOPIC_PARTITION), "1+"),
            Field("generation_id", "int32", "2+", -1),
            Field("rack_id", "string", "3+"),
        )
    ),
    prefix_of_newer=True,
)
CONSUMER_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    Struct((Field("assigned_partitions", ArrayOf(TOPIC_PARTITION), "0+"), Field("user_data", "bytes", "0+"))),
    prefix_of_newer=True,
)

# --- the decoder -----------------------------------------------------------------------------

_I8, _I16, _I32, _I64 = (struct.Struct(f) for f in (">b", ">h", ">i", ">q"))
_FIXED = {"int8": _I8, "int16": _I16, "int32": _I32, "int64": _I64}


class _Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def take(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise DecodeError(f"needs {n} bytes at byte {p}, {self.end - p} left")
        self.pos = p + n
        return p

    def fixed(self, s: struct.Struct) -> int:
        return s.unpack_from(self.buf, self.take(s.size))[0]

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if shift > 28:
                raise DecodeError(f"varint too long at byte {self.pos}")
            b = self.buf[self.take(1)]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7

    def length(self, flexible: bool, wide: bool) -> int:
        n = self.uvarint() - 1 if flexible else self.fixed(_I32 if wide else _I16)
        if n < -1:
            raise DecodeError(f"negative length {n} before byte {self.pos}")
        return n

    def string(self, flexible: bool) -> str | None:
        n = self.length(flexible, wide=False)
        if n < 0:
            return None
        p = self.take(n)
        try:
            return bytes(self.buf[p : p + n]).decode("utf-8")
        except UnicodeDecodeError as err:
            raise DecodeError(f"string at byte {p} is not UTF-8 ({err.reason})") from None

    def bytes_(self, flexible: bool) -> bytes | None:
        n = self.length(flexible, wide=True)
        if n < 0:
            return None
        p = self.take(n)
        return bytes(self.buf[p : p + n])

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag: none of the decoded records needs one
            self.take(self.uvarint())


def _read(r: _Reader, typ, flexible: bool):
    if isinstance(typ, ArrayOf):
        n = r.length(flexible, wide=True)
        if n < 0:
            return None
        if n > r.end - r.pos:  # every item takes at least one byte
            raise DecodeError(f"array of {n} items cannot fit in {r.end - r.pos} bytes")
        return [_read(r, typ.item, flexible) for _ in range(n)]
    if typ in _FIXED:
        return r.fixed(_FIXED[typ])
    if typ == "string":
        return r.string(flexible)
    if typ == "bytes":
        return r.bytes_(flexible)
    if typ == "uuid":
        p = r.take(16)
        return bytes(r.buf[p : p + 16])
    raise TypeError(typ)


def _read_struct(r: _Reader, body: Struct, version: int, flexible: bool) -> dict:
    out = {}
    for f in body.fields:
        if not _in(f.versions, version) or f.tag is not None:  # tagged: not read here (skipped below)
            out[f.name] = f.default
            continue
        if isinstance(f.type, ArrayOf) and isinstance(f.type.item, Struct):
            n = r.length(flexible, wide=True)
            if n < 0:
                out[f.name] = None
                continue
            if n > r.end - r.pos:
                raise DecodeError(f"array of {n} items cannot fit in {r.end - r.pos} bytes")
            out[f.name] = [_read_struct(r, f.type.item, version, flexible) for _ in range(n)]
        else:
            out[f.name] = _read(r, f.type, flexible)
    if flexible:
        r.tagged_fields()
    return out


def decode(message: Message, data: bytes, version: int | None = None, whole: bool = False) -> tuple[int, dict]:
    """(version, fields) of ``message`` in ``data`` (int16 version prefix unless given).

    Raises :class:`DecodeError` with a reason. A version newer than the table knows is decoded
    as the newest known one when the message keeps older fields in place (ConsumerProtocol),
    else is an error. ``whole``: bytes left over after the struct are an error too."""
    r = _Reader(data)
    if version is None:
        version = r.fixed(_I16)
    read_as = version
    if version > message.max_version and message.prefix_of_newer:
        read_as = message.max_version
    elif not (message.min_version <= version <= message.max_version):
        raise DecodeError(f"unknown {message.name} version {version}")
    fields = _read_struct(r, message.body, read_as, message.is_flexible(read_as))
    if whole and r.pos != r.end:
        raise DecodeError(f"{r.end - r.pos} bytes left over after {message.name}")
    return version, fields


# --- op tables for the numba kernel ----------------------------------------------------------

_OP_TYPE = {"int8": K.T_INT8, "int16": K.T_INT16, "int32": K.T_INT32, "int64": K.T_INT64, "uuid": K.T_UUID}


@dataclass(frozen=True)
class FlatOps:
    """A flat message compiled for ``kernels.decode_flat``: ``slots`` name the output column
    of each field (ints and strings have separate slot spaces)."""

    ops: np.ndarray  # [versions, max fields, 2] (slot, type)
    nops: np.ndarray  # [versions]: field count, -1 = unknown version
    int_slots: dict[str, int]
    str_slots: dict[str, int]

    @property
    def nints(self) -> int:
        return max(len(self.int_slots), 1)

    @property
    def nstrs(self) -> int:
        return max(len(self.str_slots), 1)


@cache
def compile_ops(messages: tuple[tuple[int, Message], ...]) -> FlatOps:
    """Compile ``(version, message)`` pairs (for keys: the key type) into one op table."""
    int_slots: dict[str, int] = {}
    str_slots: dict[str, int] = {}
    rows: dict[int, list[tuple[int, int]]] = {}
    for v, msg in messages:
        flexible = msg.is_flexible(v)
        ops = []
        for f in msg.layout(v):
            if f.type == "string":
                slot = str_slots.setdefault(f.name, len(str_slots))
                ops.append((slot, K.T_COMPACT_STRING if flexible else K.T_STRING))
            elif f.type in _OP_TYPE:
                table = str_slots if f.type == "uuid" else int_slots
                slot = table.setdefault(f.name, len(table))
                ops.append((slot, _OP_TYPE[f.type]))
            else:
                raise TypeError(f"{msg.name}.{f.name}: {f.type} is not flat")
        if flexible:
            tagged = msg.tagged(v)
            if set(tagged) - {0} or (0 in tagged and tagged[0].type != "uuid"):
                raise TypeError(f"{msg.name}: the kernel reads only a uuid under tag 0")
            slot = str_slots.setdefault(tagged[0].name, len(str_slots)) if 0 in tagged else -1
            ops.append((slot, K.T_TAGGED))
        rows[v] = ops
    nv = max(rows) + 1
    width = max(len(o) for o in rows.values()) or 1
    table = np.zeros((nv, width, 2), dtype=np.int64)
    nops = np.full(nv, -1, dtype=np.int64)
    for v, ops in rows.items():
        nops[v] = len(ops)
        for j, op in enumerate(ops):
            table[v, j] = op
    return FlatOps(table, nops, int_slots, str_slots)


def key_ops() -> FlatOps:
    return compile_ops(tuple(sorted(KEY_BY_TYPE.items())))


def offset_value_ops() -> FlatOps:
    m = OFFSET_COMMIT_VALUE
    return compile_ops(tuple((v, m) for v in range(m.min_version, m.max_version + 1)))
