"""One decoder of KRaft metadata and Raft control record values, reading the field tables of
:mod:`pipelines.kraft.messages`.

Sources: Apache Kafka ``server-common/.../serialization/AbstractApiMessageSerde.java``
(frame), ``clients/.../common/protocol/{ByteBufferAccessor,types/...}`` and the generated
``*Record.read`` methods (flexible encoding), ``clients/.../common/Uuid.java`` (text form);
``../shared/FORMATS.md`` section 7.

Grammar (big-endian; every metadata record is flexible from version 0)::

    metadata value = uvarint frameVersion (1), uvarint apiKey, uvarint version, struct
                     (bytes left over after the struct are an error)
    control value  = struct (the record key ``int16 version, int16 type`` names the struct)
    struct         = the untagged fields of the version in order, then tagged fields:
                     uvarint count, (uvarint tag, uvarint size, <size bytes: the field>)*
    bool int8 int16 uint16 int32 int64 float64 = fixed width; uuid = 16 bytes
    string, bytes  = uvarint (length + 1), 0 = null (only where nullableVersions allow it)
    array          = uvarint (count + 1), 0 = null, then the items
    nested struct  = inline struct (with its own tagged fields)

Output: a dict of the fields under Kafka's JSON names (lower camel case); every field the
version does not carry, or a tagged field that is absent, has its default. UUIDs are
Kafka's text form (URL-safe base64, no padding), bytes standard base64. Tags the table does not
know are kept under ``_unknownTaggedFields`` ({tag: base64}).
"""

from __future__ import annotations

import base64
import struct

from pipelines.kafka.errors import DecodeError
from pipelines.kraft import messages as M


class BadMetadataRecord(DecodeError):
    """A metadata or control record value that does not decode (quarantined)."""


_FIXED = {
    M.BOOL: struct.Struct(">?"), M.INT8: struct.Struct(">b"), M.INT16: struct.Struct(">h"),
    M.UINT16: struct.Struct(">H"), M.INT32: struct.Struct(">i"), M.INT64: struct.Struct(">q"),
    M.FLOAT64: struct.Struct(">d"),
}
_WIDTH = {k: s.size for k, s in _FIXED.items()}
_ARRAY_FMT = {M.INT8: "b", M.INT16: "h", M.UINT16: "H", M.INT32: "i", M.INT64: "q", M.FLOAT64: "d", M.BOOL: "?"}
_b64 = base64.urlsafe_b64encode


def _uvarint(b: bytes, p: int) -> tuple[int, int]:
    x = b[p]
    if x < 0x80:
        return x, p + 1
    value, shift = x & 0x7F, 7
    while True:
        p += 1
        x = b[p]
        value |= (x & 0x7F) << shift
        if x < 0x80:
            return value, p + 1
        shift += 7
        if shift > 28:
            raise BadMetadataRecord(f"unsigned varint longer than 5 bytes at byte {p}")


def _take(b: bytes, p: int, n: int) -> int:
    if p + n > len(b):
        raise BadMetadataRecord(f"field runs past the record: needs {n} bytes at byte {p}, {len(b) - p} left")
    return p + n


def _fixed(b: bytes, p: int, spec: M.Spec):
    s = _FIXED[spec.kind]
    return s.unpack_from(b, p)[0], p + s.size


def _uuid(b: bytes, p: int, spec: M.Spec):
    q = _take(b, p, 16)
    return _b64(b[p:q])[:22].decode("ascii"), q


def _length(b: bytes, p: int, spec: M.Spec) -> tuple[int, int]:
    """The compact length of a string/bytes/array (-1 = null, where allowed)."""
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = _uvarint(b, p)
    if n == 0 and not spec.nullable:
        raise BadMetadataRecord(f"null {spec.name} where the version does not allow it")
    return n - 1, p


def _string(b: bytes, p: int, spec: M.Spec):
    n, p = _length(b, p, spec)
    if n < 0:
        return None, p
    q = _take(b, p, n)
    try:
        return b[p:q].decode("utf-8"), q
    except UnicodeDecodeError as err:
        raise BadMetadataRecord(f"{spec.name} is not UTF-8 ({err.reason})") from None


def _bytes(b: bytes, p: int, spec: M.Spec):
    n, p = _length(b, p, spec)
    if n < 0:
        return None, p
    q = _take(b, p, n)
    return base64.b64encode(b[p:q]).decode("ascii"), q


def _array(b: bytes, p: int, spec: M.Spec):
    n, p = _length(b, p, spec)
    if n < 0:
        return None, p
    item = spec.item
    if item in _ARRAY_FMT:
        q = _take(b, p, n * _WIDTH[item])
        return list(struct.unpack_from(f">{n}{_ARRAY_FMT[item]}", b, p)), q
    if n > len(b) - p:  # every item takes at least one byte
        raise BadMetadataRecord(f"array {spec.name} of {n} items cannot fit in {len(b) - p} bytes")
    out = []
    if item == M.STRUCT:
        for _ in range(n):
            v, p = _struct(b, p, spec.sub)
            out.append(v)
    else:
        one = M.Spec(spec.name, item, False)
        read = _READ[item]
        for _ in range(n):
            v, p = read(b, p, one)
            out.append(v)
    return out, p


def _nested(b: bytes, p: int, spec: M.Spec):
    return _struct(b, p, spec.sub)


_READ = {**{k: _fixed for k in _FIXED}, M.UUID: _uuid, M.STRING: _string, M.BYTES: _bytes, M.ARRAY: _array,
         M.STRUCT: _nested}


_RUN_FMT = {M.BOOL: "?", M.INT8: "b", M.INT16: "h", M.UINT16: "H", M.INT32: "i", M.INT64: "q", M.FLOAT64: "d",
            M.UUID: "16s"}
_PLANS: dict[int, tuple] = {}  # id(layout) -> its steps (layouts are cached: one object per version)


def _plan(layout: M.Layout) -> tuple:
    """The layout's untagged fields as steps: each run of consecutive fixed-width fields is one
    ``struct`` unpack (names, positions of its UUIDs); any other field by its reader in ``_READ``."""
    steps, run = [], []

    def close():
        if run:
            fmt = ">" + "".join(_RUN_FMT[s.kind] for s in run)
            uuids = tuple(i for i, s in enumerate(run) if s.kind == M.UUID)
            steps.append((struct.Struct(fmt), tuple(s.name for s in run), uuids))
            run.clear()

    for spec in layout.fields:
        if spec.kind in _RUN_FMT:
            run.append(spec)
        else:
            close()
            steps.append(spec)
    close()
    _PLANS[id(layout)] = plan = tuple(steps)
    return plan


def _struct(b: bytes, p: int, layout: M.Layout) -> tuple[dict, int]:
    out = dict(layout.template)
    for step in _PLANS.get(id(layout)) or _plan(layout):
        if type(step) is tuple:
            unpack, names, uuids = step
            values = unpack.unpack_from(b, p)
            p += unpack.size
            if uuids:
                values = list(values)
                for i in uuids:
                    values[i] = _b64(values[i])[:22].decode("ascii")
            out.update(zip(names, values))
        else:
            out[step.name], p = _READ[step.kind](b, p, step)
    if b[p] == 0:  # no tagged fields: the usual case
        return out, p + 1
    count, p = _uvarint(b, p)
    tagged = layout.tagged
    for _ in range(count):
        tag, size = b[p], b[p + 1]
        if tag < 0x80 and size < 0x80:  # one byte each: every tag and size of today's schemas
            p += 2
        else:
            tag, p = _uvarint(b, p)
            size, p = _uvarint(b, p)
        end = _take(b, p, size)
        spec = tagged.get(tag)
        if spec is None:
            out.setdefault("_unknownTaggedFields", {})[str(tag)] = base64.b64encode(b[p:end]).decode("ascii")
        else:
            out[spec.name], q = _READ[spec.kind](b, p, spec)
            if q != end:  # also a value that ran past its size into the next bytes
                raise BadMetadataRecord(f"tagged field {spec.name} (tag {tag}) of {size} bytes holds {q - p}")
        p = end
    return out, p


def _decode(b: bytes, p: int, layout: M.Layout, what: str) -> dict:
    try:
        fields, p = _struct(b, p, layout)
    except (IndexError, struct.error):
        raise BadMetadataRecord(f"{what} runs past its {len(b)} bytes") from None
    if p != len(b):
        raise BadMetadataRecord(f"{len(b) - p} bytes left over after {what}")
    return fields


def decode_metadata(value: bytes) -> tuple[int, int, dict | None]:
    """(apiKey, version, fields) of one metadata record value; fields None when the table
    does not know this apiKey or version (the caller keeps the record raw)."""
    try:
        frame, p = _uvarint(value, 0)
        api_key, p = _uvarint(value, p)
        version, p = _uvarint(value, p)
    except IndexError:
        raise BadMetadataRecord(f"record frame cut off ({len(value)} bytes)") from None
    if frame != 1:
        raise BadMetadataRecord(f"frame version {frame} (expected 1)")
    layout = M.metadata_layout(api_key, version)
    if layout is None:
        return api_key, version, None
    return api_key, version, _decode(value, p, layout, f"{M.record_name(api_key)} v{version}")


def decode_control(key: bytes, value: bytes) -> tuple[int, int, dict | None]:
    """(control type, version, fields) of one Raft control record; fields None when the type
    or version is unknown."""
    if len(key) != 4:
        raise BadMetadataRecord(f"control record key of {len(key)} bytes (expected 4)")
    _, ctype = struct.unpack(">hh", key)
    if len(value) < 2:
        raise BadMetadataRecord(f"control record value of {len(value)} bytes")
    version = struct.unpack_from(">h", value)[0]
    layout = M.control_layout(ctype, version) if version >= 0 else None
    if layout is None:
        return ctype, version, None
    return ctype, version, _decode(value, 0, layout, f"{M.control_messages()[ctype].name} v{version}")
