"""Kafka message schemas as data, and one decoder of their flexible versions: the field tables
of KRaft metadata records (:mod:`pipelines.kraft.messages`) and of the KIP-848/932 group
records of ``__consumer_offsets`` (:mod:`pipelines.kafka.groups`).

Sources: Apache Kafka ``clients/.../common/protocol/{ByteBufferAccessor,types/...}`` and the
generated ``*.read`` methods (flexible encoding; ``generator/.../MessageDataGenerator.java``
for the markers of nullable structs), the message JSON schemas
(``generator/src/main/java/.../MessageSpec.java``: ``validVersions``, ``flexibleVersions``,
``fields`` with ``versions``, ``nullableVersions``, ``taggedVersions``, ``tag``, ``default``,
``commonStructs``), ``clients/.../common/Uuid.java`` (text form); ``docs/formats.md``
sections 2, 7 and 8.

Grammar (big-endian) of a flexible struct::

    struct        = the untagged fields of the version in order, then tagged fields:
                    uvarint count, (uvarint tag, uvarint size, <size bytes: the field>)*
    bool int8 int16 uint16 int32 int64 float64 = fixed width; uuid = 16 bytes
    string, bytes = uvarint (length + 1), 0 = null (only where nullableVersions allow it)
    array         = uvarint (count + 1), 0 = null, then the items
    nested struct = inline struct (with its own tagged fields); a nullable one is preceded by
                    a marker: untagged int8 -1 (null) or 1, tagged uvarint 0 (null) or 1

A schema field is ``{name, type, versions, nullableVersions, taggedVersions, tag, default,
fields}``; ``type`` is a primitive, ``[]T`` an array of a primitive or of a struct, or a struct
name with inline ``fields`` (or one of the message's ``commonStructs``). :meth:`Message.layout`
expands a message for one version into a :class:`Layout`: the untagged fields in order, the
tagged fields by tag, and every field's default (the value of a field the version does not
carry, or of an absent tagged field). :func:`decode_struct` reads a layout into a dict under
Kafka's JSON names (lower camel case); UUIDs in Kafka's text form (URL-safe base64, no
padding), bytes standard base64; tags the table does not know under ``_unknownTaggedFields``
({tag: base64}).
"""

from __future__ import annotations

import base64
import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from pipelines.kafka.errors import DecodeError

# field kinds the decoder dispatches on
BOOL, INT8, INT16, UINT16, INT32, INT64, FLOAT64, UUID, STRING, BYTES, STRUCT, ARRAY = range(12)
PRIMITIVES = {
    "bool": BOOL, "int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32, "int64": INT64,
    "float64": FLOAT64, "uuid": UUID, "string": STRING, "bytes": BYTES,
}
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID as Kafka prints it


class BadStruct(DecodeError):
    """A flexible struct that does not decode."""


def versions_hold(versions: str | None, v: int) -> bool:
    if not versions or versions == "none":
        return False
    if versions.endswith("+"):
        return v >= int(versions[:-1])
    lo, _, hi = versions.partition("-")
    return int(lo) <= v <= int(hi or lo)


def json_name(name: str) -> str:
    """Kafka's JSON converters' key: the schema name in lower camel case."""
    return name[:1].lower() + name[1:]


@dataclass(frozen=True)
class Spec:
    """One field as the decoder reads it. ``item``: an array's item kind; ``sub``: the layout
    of a struct, or of an array's struct items."""

    name: str
    kind: int
    nullable: bool
    item: int = -1
    sub: Layout | None = None


@dataclass(frozen=True)
class Layout:
    fields: tuple[Spec, ...]  # untagged, in order
    tagged: dict[int, Spec]
    template: dict[str, object]  # every field in schema order: its default when absent from this version or tagged


def _default(field: dict, kind: int, nullable: bool):
    text = field.get("default")
    if text == "null" or ("default" in field and text is None):
        return None
    if isinstance(text, (bool, int, float)):  # a JSON number or boolean rather than its text
        return text
    if kind == ARRAY:
        return []
    if kind == STRUCT:
        return None
    if kind == BOOL:
        return text == "true"
    if kind in (INT8, INT16, UINT16, INT32, INT64):
        return int(text, 0) if text else 0
    if kind == FLOAT64:
        return float(text) if text else 0.0
    if kind == UUID:
        return ZERO_UUID
    return text if text is not None else ("" if kind == STRING else b"")


def _layout(fields: list[dict], version: int, structs: dict[str, list[dict]]) -> Layout:
    order, tagged, template = [], {}, {}
    for f in fields:
        typ = f["type"]
        is_array = typ.startswith("[]")
        base = typ[2:] if is_array else typ
        sub = None
        if base in PRIMITIVES:
            item = PRIMITIVES[base]
        else:
            item = STRUCT
            sub = _layout(f.get("fields") or structs[base], version, structs)
        kind = ARRAY if is_array else item
        nullable = versions_hold(f.get("nullableVersions"), version)
        spec = Spec(json_name(f["name"]), kind, nullable, item if is_array else -1, sub)
        template[spec.name] = _default(f, kind, nullable)
        # a tagged field may leave out "versions": it is in the versions it is tagged in
        if versions_hold(f.get("versions") or f.get("taggedVersions"), version):
            if versions_hold(f.get("taggedVersions"), version):
                tagged[int(f["tag"])] = spec
            else:
                order.append(spec)
    return Layout(tuple(order), tagged, template)


@dataclass(frozen=True)
class Message:
    name: str
    versions: str
    flexible: str
    fields: list
    structs: dict

    @property
    def max_version(self) -> int:
        return int(self.versions.rpartition("-")[2])

    def layout(self, version: int) -> Layout | None:
        """The field table of ``version``; None for a version the schema does not know."""
        if not versions_hold(self.versions, version):
            return None
        if not versions_hold(self.flexible, version):
            raise NotImplementedError(f"{self.name} v{version} is not flexible")
        return _layout(self.fields, version, self.structs)


def message(doc: dict) -> Message:
    structs = {s["name"]: s["fields"] for s in doc.get("commonStructs", [])}
    return Message(doc["name"], doc["validVersions"], doc["flexibleVersions"], doc["fields"], structs)


def read_schema(path: Path) -> dict:
    """A Kafka message schema: JSON with ``//`` comment lines."""
    return json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.MULTILINE))


# --- the decoder -----------------------------------------------------------------------------

_FIXED = {
    BOOL: struct.Struct(">?"), INT8: struct.Struct(">b"), INT16: struct.Struct(">h"),
    UINT16: struct.Struct(">H"), INT32: struct.Struct(">i"), INT64: struct.Struct(">q"),
    FLOAT64: struct.Struct(">d"),
}
_WIDTH = {k: s.size for k, s in _FIXED.items()}
_ARRAY_FMT = {INT8: "b", INT16: "h", UINT16: "H", INT32: "i", INT64: "q", FLOAT64: "d", BOOL: "?"}
_b64 = base64.urlsafe_b64encode


def uvarint(b: bytes, p: int) -> tuple[int, int]:
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
            raise BadStruct(f"unsigned varint longer than 5 bytes at byte {p}")


def _take(b: bytes, p: int, n: int) -> int:
    if p + n > len(b):
        raise BadStruct(f"field runs past the record: needs {n} bytes at byte {p}, {len(b) - p} left")
    return p + n


def _fixed(b: bytes, p: int, spec: Spec):
    s = _FIXED[spec.kind]
    return s.unpack_from(b, p)[0], p + s.size


def _uuid(b: bytes, p: int, spec: Spec):
    q = _take(b, p, 16)
    return _b64(b[p:q])[:22].decode("ascii"), q


def _length(b: bytes, p: int, spec: Spec) -> tuple[int, int]:
    """The compact length of a string/bytes/array (-1 = null, where allowed)."""
    n = b[p]
    if n < 0x80:
        p += 1
    else:
        n, p = uvarint(b, p)
    if n == 0 and not spec.nullable:
        raise BadStruct(f"null {spec.name} where the version does not allow it")
    return n - 1, p


def _string(b: bytes, p: int, spec: Spec):
    n, p = _length(b, p, spec)
    if n < 0:
        return None, p
    q = _take(b, p, n)
    try:
        return b[p:q].decode("utf-8"), q
    except UnicodeDecodeError as err:
        raise BadStruct(f"{spec.name} is not UTF-8 ({err.reason})") from None


def _bytes(b: bytes, p: int, spec: Spec):
    n, p = _length(b, p, spec)
    if n < 0:
        return None, p
    q = _take(b, p, n)
    return base64.b64encode(b[p:q]).decode("ascii"), q


def _array(b: bytes, p: int, spec: Spec):
    n, p = _length(b, p, spec)
    if n < 0:
        return None, p
    item = spec.item
    if item in _ARRAY_FMT:
        q = _take(b, p, n * _WIDTH[item])
        return list(struct.unpack_from(f">{n}{_ARRAY_FMT[item]}", b, p)), q
    if n > len(b) - p:  # every item takes at least one byte
        raise BadStruct(f"array {spec.name} of {n} items cannot fit in {len(b) - p} bytes")
    out = []
    if item == STRUCT:
        for _ in range(n):
            v, p = _struct(b, p, spec.sub)
            out.append(v)
    else:
        one = Spec(spec.name, item, False)
        read = _READ[item]
        for _ in range(n):
            v, p = read(b, p, one)
            out.append(v)
    return out, p


def _nested(b: bytes, p: int, spec: Spec):
    if spec.nullable:  # an untagged nullable struct: int8 -1 (null) or 1, then the struct
        if b[p] >= 0x80:
            return None, p + 1
        p += 1
    return _struct(b, p, spec.sub)


_READ = {**{k: _fixed for k in _FIXED}, UUID: _uuid, STRING: _string, BYTES: _bytes, ARRAY: _array, STRUCT: _nested}


_RUN_FMT = {BOOL: "?", INT8: "b", INT16: "h", UINT16: "H", INT32: "i", INT64: "q", FLOAT64: "d", UUID: "16s"}
_PLANS: dict[int, tuple] = {}  # id(layout) -> its steps (layouts are cached: one object per version)


def _plan(layout: Layout) -> tuple:
    """The layout's untagged fields as steps: each run of consecutive fixed-width fields is one
    ``struct`` unpack (names, positions of its UUIDs); any other field by its reader in ``_READ``."""
    steps, run = [], []

    def close():
        if run:
            fmt = ">" + "".join(_RUN_FMT[s.kind] for s in run)
            uuids = tuple(i for i, s in enumerate(run) if s.kind == UUID)
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


def _struct(b: bytes, p: int, layout: Layout) -> tuple[dict, int]:
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
            out.update(zip(names, values, strict=True))
        else:
            out[step.name], p = _READ[step.kind](b, p, step)
    if b[p] == 0:  # no tagged fields: the usual case
        return out, p + 1
    count, p = uvarint(b, p)
    tagged = layout.tagged
    for _ in range(count):
        tag, size = b[p], b[p + 1]
        if tag < 0x80 and size < 0x80:  # one byte each: every tag and size of today's schemas
            p += 2
        else:
            tag, p = uvarint(b, p)
            size, p = uvarint(b, p)
        end = _take(b, p, size)
        spec = tagged.get(tag)
        if spec is None:
            out.setdefault("_unknownTaggedFields", {})[str(tag)] = base64.b64encode(b[p:end]).decode("ascii")
        elif spec.kind == STRUCT and spec.nullable:  # uvarint 0 (null) or 1, then the struct
            marker, q = uvarint(b, p)
            out[spec.name], q = (None, q) if marker == 0 else _struct(b, q, spec.sub)
            if q != end:
                raise BadStruct(f"tagged field {spec.name} (tag {tag}) of {size} bytes holds {q - p}")
        else:
            out[spec.name], q = _READ[spec.kind](b, p, spec)
            if q != end:  # also a value that ran past its size into the next bytes
                raise BadStruct(f"tagged field {spec.name} (tag {tag}) of {size} bytes holds {q - p}")
        p = end
    return out, p


def decode_struct(b: bytes, p: int, layout: Layout, what: str) -> dict:
    """The fields of the struct ``layout`` at byte ``p`` of ``b``, which must end the bytes."""
    try:
        fields, p = _struct(b, p, layout)
    except (IndexError, struct.error):
        raise BadStruct(f"{what} runs past its {len(b)} bytes") from None
    if p != len(b):
        raise BadStruct(f"{len(b) - p} bytes left over after {what}")
    return fields
