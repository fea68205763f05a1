"""KRaft metadata and Raft control record values, read by the shared flexible-struct decoder
(:mod:`pipelines.kafka.flexible`) from the field tables of :mod:`pipelines.kraft.messages`.

Sources: Apache Kafka ``server-common/.../serialization/AbstractApiMessageSerde.java``
(frame); ``docs/formats.md`` section 7.

Grammar (every metadata record is flexible from version 0)::

    metadata value = uvarint frameVersion (1), uvarint apiKey, uvarint version, struct
                     (bytes left over after the struct are an error)
    control value  = struct (the record key ``int16 version, int16 type`` names the struct)
    struct         = a flexible struct (``pipelines.kafka.flexible``)

Output: a dict of the fields under Kafka's JSON names (see ``pipelines.kafka.flexible``).
"""

from __future__ import annotations

import struct

from pipelines.kafka.errors import DecodeError
from pipelines.kafka.flexible import BadStruct, decode_struct, uvarint
from pipelines.kraft import messages as M


class BadMetadataRecord(DecodeError):
    """A metadata or control record value that does not decode (quarantined)."""


def _decode(b: bytes, p: int, layout: M.Layout, what: str) -> dict:
    try:
        return decode_struct(b, p, layout, what)
    except BadStruct as err:
        raise BadMetadataRecord(str(err)) from None


def decode_metadata(value: bytes) -> tuple[int, int, dict | None]:
    """(apiKey, version, fields) of one metadata record value; fields None when the table
    does not know this apiKey or version (the caller keeps the record raw)."""
    try:
        frame, p = uvarint(value, 0)
        api_key, p = uvarint(value, p)
        version, p = uvarint(value, p)
    except BadStruct as err:
        raise BadMetadataRecord(str(err)) from None
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
