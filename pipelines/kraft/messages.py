"""KRaft metadata records as data: one field table per (apiKey, version), from Apache Kafka's
message schemas.

Sources: ``schemas/*.json`` in this package are Apache Kafka's
``metadata/src/main/resources/common/metadata/*.json`` (Apache-2.0, copied unchanged from
``../shared/schemas/kafka/metadata/``), read at import. Three more are transcribed below as the
same JSON, because they are not in that copy: ``ClearElrRecord`` (apiKey 28, Kafka 3.9+) and the
Raft control records of ``clients/src/main/resources/common/message/`` -
``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
``KRaftVersionRecord``, ``VotersRecord`` (control types 2-6 of ``ControlRecordType``).

A schema field is ``{name, type, versions, nullableVersions, taggedVersions, tag, default,
fields}``; ``type`` is a primitive (bool int8 int16 uint16 int32 int64 float64 uuid string
bytes), ``[]T`` an array of a primitive or of a struct, or a struct name with inline
``fields`` (or one of the message's ``commonStructs``). :func:`layout` expands a message for one
version into a :class:`Layout`: the untagged fields in order, the tagged fields by tag, and every
field's default (the value of a field the version does not carry, or of an absent tagged field) - the table the decoder
(:mod:`pipelines.kraft.decode`) reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SCHEMA_DIR = Path(__file__).parent / "schemas"

# field kinds the decoder dispatches on
BOOL, INT8, INT16, UINT16, INT32, INT64, FLOAT64, UUID, STRING, BYTES, STRUCT, ARRAY = range(12)
PRIMITIVES = {
    "bool": BOOL, "int8": INT8, "int16": INT16, "uint16": UINT16, "int32": INT32, "int64": INT64,
    "float64": FLOAT64, "uuid": UUID, "string": STRING, "bytes": BYTES,
}
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID as Kafka prints it

_VOTER = [{"name": "VoterId", "type": "int32", "versions": "0+"}]
_TRANSCRIBED = [
    {"apiKey": 28, "name": "ClearElrRecord", "validVersions": "0", "flexibleVersions": "0+",
     "fields": [{"name": "TopicName", "type": "string", "versions": "0+"}]},
]
CONTROL_SCHEMAS = {
    2: {"name": "LeaderChangeMessage", "validVersions": "0", "flexibleVersions": "0+", "fields": [
        {"name": "Version", "type": "int16", "versions": "0+"},
        {"name": "LeaderId", "type": "int32", "versions": "0+"},
        {"name": "Voters", "type": "[]Voter", "versions": "0+"},
        {"name": "GrantingVoters", "type": "[]Voter", "versions": "0+"}],
        "commonStructs": [{"name": "Voter", "versions": "0+", "fields": _VOTER}]},
    3: {"name": "SnapshotHeaderRecord", "validVersions": "0", "flexibleVersions": "0+", "fields": [
        {"name": "Version", "type": "int16", "versions": "0+"},
        {"name": "LastContainedLogTimestamp", "type": "int64", "versions": "0+"}]},
    4: {"name": "SnapshotFooterRecord", "validVersions": "0", "flexibleVersions": "0+", "fields": [
        {"name": "Version", "type": "int16", "versions": "0+"}]},
    5: {"name": "KRaftVersionRecord", "validVersions": "0", "flexibleVersions": "0+", "fields": [
        {"name": "Version", "type": "int16", "versions": "0+"},
        {"name": "KRaftVersion", "type": "int16", "versions": "0+"}]},
    6: {"name": "VotersRecord", "validVersions": "0", "flexibleVersions": "0+", "fields": [
        {"name": "Version", "type": "int16", "versions": "0+"},
        {"name": "Voters", "type": "[]Voter", "versions": "0+", "fields": [
            {"name": "VoterId", "type": "int32", "versions": "0+"},
            {"name": "VoterUuid", "type": "uuid", "versions": "0+"},
            {"name": "Endpoints", "type": "[]Endpoint", "versions": "0+", "fields": [
                {"name": "Name", "type": "string", "versions": "0+"},
                {"name": "Host", "type": "string", "versions": "0+"},
                {"name": "Port", "type": "uint16", "versions": "0+"}]},
            {"name": "KRaftVersionFeature", "type": "KRaftVersionFeature", "versions": "0+", "fields": [
                {"name": "MinSupportedVersion", "type": "int16", "versions": "0+"},
                {"name": "MaxSupportedVersion", "type": "int16", "versions": "0+"}]}]}]},
}


def _in(versions: str | None, v: int) -> bool:
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
    if text == "null":
        return None
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
        nullable = _in(f.get("nullableVersions"), version)
        spec = Spec(json_name(f["name"]), kind, nullable, item if is_array else -1, sub)
        template[spec.name] = _default(f, kind, nullable)
        if _in(f.get("versions"), version):
            if _in(f.get("taggedVersions"), version):
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
        if not _in(self.versions, version):
            return None
        if not _in(self.flexible, version):
            raise NotImplementedError(f"{self.name} v{version} is not flexible")  # no metadata record is
        return _layout(self.fields, version, self.structs)


def _message(doc: dict) -> Message:
    structs = {s["name"]: s["fields"] for s in doc.get("commonStructs", [])}
    return Message(doc["name"], doc["validVersions"], doc["flexibleVersions"], doc["fields"], structs)


def _read_schema(path: Path) -> dict:
    """A Kafka message schema: JSON with ``//`` comment lines."""
    return json.loads(re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.MULTILINE))


@cache
def metadata_messages() -> dict[int, Message]:
    """apiKey -> message, of every schema file of the package and the transcribed ones."""
    docs = [_read_schema(p) for p in sorted(SCHEMA_DIR.glob("*.json"))] + _TRANSCRIBED
    out = {}
    for doc in docs:
        if doc.get("type", "metadata") == "metadata":
            out[int(doc["apiKey"])] = _message(doc)
    return out


@cache
def control_messages() -> dict[int, Message]:
    """Raft control record type -> message."""
    return {t: _message(doc) for t, doc in CONTROL_SCHEMAS.items()}


@cache
def metadata_layout(api_key: int, version: int) -> Layout | None:
    msg = metadata_messages().get(api_key)
    return None if msg is None else msg.layout(version)


@cache
def control_layout(control_type: int, version: int) -> Layout | None:
    msg = control_messages().get(control_type)
    return None if msg is None else msg.layout(version)


def record_name(api_key: int) -> str | None:
    msg = metadata_messages().get(api_key)
    return None if msg is None else msg.name
