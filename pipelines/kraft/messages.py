"""KRaft metadata records as data: one field table per (apiKey, version), from Apache Kafka's
message schemas.

Sources: ``schemas/*.json`` in this package are Apache Kafka's
``metadata/src/main/resources/common/metadata/*.json`` (Apache-2.0, copied unchanged;
``schemas/SOURCES.md``), read at import. Three more are transcribed below as the
same JSON, because they are not in that copy: ``ClearElrRecord`` (apiKey 28, Kafka 3.9+) and the
Raft control records of ``clients/src/main/resources/common/message/`` -
``LeaderChangeMessage``, ``SnapshotHeaderRecord``, ``SnapshotFooterRecord``,
``KRaftVersionRecord``, ``VotersRecord`` (control types 2-6 of ``ControlRecordType``).

The schema reading, the layouts and the decoder are the shared ones of
:mod:`pipelines.kafka.flexible` (the KIP-848 group records use them too); this module re-exports
its names (``Spec``, ``Layout``, the field kinds) for the KRaft modules.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pipelines.kafka.flexible import (  # noqa: F401  (re-exported for the KRaft modules)
    ARRAY,
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    STRUCT,
    UINT16,
    UUID,
    Layout,
    Message,
    Spec,
    message,
    read_schema,
)

SCHEMA_DIR = Path(__file__).parent / "schemas"

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


@cache
def metadata_messages() -> dict[int, Message]:
    """apiKey -> message, of every schema file of the package and the transcribed ones."""
    docs = [read_schema(p) for p in sorted(SCHEMA_DIR.glob("*.json"))] + _TRANSCRIBED
    out = {}
    for doc in docs:
        if doc.get("type", "metadata") == "metadata":
            out[int(doc["apiKey"])] = message(doc)
    return out


@cache
def control_messages() -> dict[int, Message]:
    """Raft control record type -> message."""
    return {t: message(doc) for t, doc in CONTROL_SCHEMAS.items()}


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
