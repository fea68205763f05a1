"""The KIP-848 consumer group records of ``__consumer_offsets`` (key types 3-8 and 16) into
their raw tables, and the share (KIP-932, 9-15) and streams (KIP-1071, 17-24) group records
into ``raw/group_coordinator_records``, decoded generically (type name, group, member, fields
as JSON).

Sources: Apache Kafka ``group-coordinator/src/main/resources/common/message/`` -
``ConsumerGroup{Metadata,PartitionMetadata,MemberMetadata,TargetAssignmentMetadata,
TargetAssignmentMember,CurrentMemberAssignment,RegularExpression}{Key,Value}.json``,
``ShareGroup*Value.json`` and ``StreamsGroup*Value.json`` (copied unchanged in ``schemas/``:
the consumer group ones from Kafka's source tree, ``schemas/SOURCES.md``, the share group
ones from Kafka 3.9/4.0, the streams group ones from apache/kafka commits of 2024-2025 listed
in ``schemas/STREAMS_SOURCES.md``; the streams type numbers 17-24 from their ``apiKey``);
``group-coordinator/.../modern/MemberState.java`` (state values);
``docs/formats.md`` sections 2 and 8.

Grammar::

    key   = int16 type, string GroupId [, string MemberId | string RegularExpression (16)]
            (non-flexible: int16 length + UTF-8; nothing may follow)
    value = int16 version (0), flexible struct of ``<Name>Value.json`` (``pipelines.kafka.flexible``)
            | null: a tombstone, the record is deleted

A consumer group value of a version the schemas do not know stays raw in
``raw/coordinator_records`` (counted, never a crash); a consumer group key or value that does
not decode goes to ``raw/quarantine``. A share or streams group value of a version its schema
does not know, or that does not decode with the copy of its (preview) schema, keeps its bytes
in ``raw/group_coordinator_records.value`` (the streams schemas still change between
releases). These records are few next to offset commits: one Python decode per record.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pyarrow as pa

from pipelines import arrow
from pipelines.kafka.errors import DecodeError, UndecodableKey, UndecodableValue
from pipelines.kafka.flexible import Layout, decode_struct, message, read_schema
from pipelines.kafka.records import (
    GROUP_MEMBER_KEY,
    GROUP_PREFIXED_KEY,
    REGULAR_EXPRESSION_KEY,
    decode,
)
from pipelines.warehouse.tables import (
    RAW_CONSUMER_GROUP_CURRENT_ASSIGNMENTS,
    RAW_CONSUMER_GROUP_MEMBERS,
    RAW_CONSUMER_GROUP_METADATA,
    RAW_CONSUMER_GROUP_PARTITION_METADATA,
    RAW_CONSUMER_GROUP_REGEXES,
    RAW_CONSUMER_GROUP_TARGET_ASSIGNMENTS,
    RAW_CONSUMER_GROUP_TARGET_METADATA,
    RAW_GROUP_COORDINATOR_RECORDS,
    TS,
)

SCHEMA_DIR = Path(__file__).parent / "schemas"
# the share and streams group schemas of the newest release the cluster kit runs (copied from
# its kafka-group-coordinator jar, schemas/kafka-4.2.2/SOURCES.md); a value is read with these
# first, then with the earlier copies in SCHEMA_DIR (the 3.9/4.0 previews)
RELEASE_SCHEMA_DIR = SCHEMA_DIR / "kafka-4.2.2"

# key type -> (record name, key has a member id)
RECORD_TYPES = {
    3: ("ConsumerGroupMetadata", False),
    4: ("ConsumerGroupPartitionMetadata", False),
    5: ("ConsumerGroupMemberMetadata", True),
    6: ("ConsumerGroupTargetAssignmentMetadata", False),
    7: ("ConsumerGroupTargetAssignmentMember", True),
    8: ("ConsumerGroupCurrentMemberAssignment", True),
    9: ("ShareGroupPartitionMetadata", False),
    10: ("ShareGroupMemberMetadata", True),
    11: ("ShareGroupMetadata", False),
    12: ("ShareGroupTargetAssignmentMetadata", False),
    13: ("ShareGroupTargetAssignmentMember", True),
    14: ("ShareGroupCurrentMemberAssignment", True),
    15: ("ShareGroupStatePartitionMetadata", False),
    16: ("ConsumerGroupRegularExpression", False),
    17: ("StreamsGroupMetadata", False),
    18: ("StreamsGroupPartitionMetadata", False),
    19: ("StreamsGroupMemberMetadata", True),
    20: ("StreamsGroupTargetAssignmentMetadata", False),
    21: ("StreamsGroupTargetAssignmentMember", True),
    22: ("StreamsGroupCurrentMemberAssignment", True),
    23: ("StreamsGroupTopology", False),
    24: ("StreamsGroupTargetAssignmentResolvedTopicIds", False),
}
GROUP_TYPES = range(3, 25)
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}

TABLES = {
    3: ("raw/consumer_group_metadata", RAW_CONSUMER_GROUP_METADATA),
    4: ("raw/consumer_group_partition_metadata", RAW_CONSUMER_GROUP_PARTITION_METADATA),
    5: ("raw/consumer_group_members", RAW_CONSUMER_GROUP_MEMBERS),
    6: ("raw/consumer_group_target_metadata", RAW_CONSUMER_GROUP_TARGET_METADATA),
    7: ("raw/consumer_group_target_assignments", RAW_CONSUMER_GROUP_TARGET_ASSIGNMENTS),
    8: ("raw/consumer_group_current_assignments", RAW_CONSUMER_GROUP_CURRENT_ASSIGNMENTS),
    16: ("raw/consumer_group_regexes", RAW_CONSUMER_GROUP_REGEXES),
}
GENERIC_TABLE = "raw/group_coordinator_records"
TABLE_NAMES = (*(t for t, _ in TABLES.values()), GENERIC_TABLE)


def record_name(key_type: int) -> str:
    return RECORD_TYPES[key_type][0]


@cache
def value_layouts(key_type: int, version: int) -> tuple[Layout, ...]:
    """The field tables of a record's value, the release's copy first; empty when no schema
    here knows it."""
    out = []
    for d in (RELEASE_SCHEMA_DIR, SCHEMA_DIR):
        path = d / f"{record_name(key_type)}Value.json"
        if path.is_file():
            layout = message(read_schema(path)).layout(version)
            if layout is not None:
                out.append(layout)
    return tuple(out)


def value_layout(key_type: int, version: int) -> Layout | None:
    """The first field table of a record's value; None when no schema here knows it."""
    layouts = value_layouts(key_type, version)
    return layouts[0] if layouts else None


def decode_key(key_type: int, key: bytes) -> tuple[str, str | None]:
    """(group id, member id or regular expression) of a group record key; raises DecodeError."""
    if key_type == 16:
        _, k = decode(REGULAR_EXPRESSION_KEY, key, whole=True)
        return k["group"], k["regular_expression"]
    _, k = decode(GROUP_MEMBER_KEY if RECORD_TYPES[key_type][1] else GROUP_PREFIXED_KEY, key, whole=True)
    return k["group"], k.get("member_id")


def decode_value(key_type: int, value: bytes) -> tuple[int, dict | None]:
    """(version, fields) of a group record value; fields None when no schema knows its type or
    version (kept raw). Raises DecodeError when a known version does not decode."""
    if len(value) < 2:
        raise DecodeError(f"value of {len(value)} bytes has no version")
    version = int.from_bytes(value[:2], "big", signed=True)
    layouts = value_layouts(key_type, version) if version >= 0 else ()
    if not layouts:
        return version, None
    for layout in layouts[:-1]:  # a layout that does not read the whole value: the next one
        try:
            return version, decode_struct(value, 2, layout, f"{record_name(key_type)}Value v{version}")
        except DecodeError:
            pass
    return version, decode_struct(value, 2, layouts[-1], f"{record_name(key_type)}Value v{version}")


def _topic_partitions(items: list[dict] | None) -> list[dict]:
    return [{"topic_id": t["topicId"], "partitions": t["partitions"]} for t in items or []]


def _rows(key_type: int, group: str, second: str | None, v: dict | None) -> list[dict]:
    """The rows of one record in its table (``v`` None: a tombstone)."""
    if key_type == 3:
        return [dict(group_id=group, group_epoch=None if v is None else v["epoch"])]
    if key_type == 6:
        return [dict(group_id=group, assignment_epoch=None if v is None else v["assignmentEpoch"])]
    if key_type == 4:
        topics = (v or {}).get("topics") or [None]
        return [
            dict(
                group_id=group,
                topic_id=t and t["topicId"],
                topic=t and t["topicName"],
                num_partitions=t and t["numPartitions"],
            )
            for t in topics
        ]
    if key_type == 5:
        v = v or {}
        classic = v.get("classicMemberMetadata")
        return [
            dict(
                group_id=group,
                member_id=second,
                instance_id=v.get("instanceId"),
                rack_id=v.get("rackId"),
                client_id=v.get("clientId"),
                client_host=v.get("clientHost"),
                subscribed_topics=v.get("subscribedTopicNames"),
                subscribed_topic_regex=v.get("subscribedTopicRegex"),
                rebalance_timeout_ms=v.get("rebalanceTimeoutMs"),
                server_assignor=v.get("serverAssignor"),
                classic_member_metadata=None if classic is None else json.dumps(classic, sort_keys=True),
            )
        ]
    if key_type == 7:
        return [
            dict(
                group_id=group,
                member_id=second,
                topic_partitions=None if v is None else _topic_partitions(v["topicPartitions"]),
            )
        ]
    if key_type == 8:
        if v is None:
            return [dict(group_id=group, member_id=second)]
        return [
            dict(
                group_id=group,
                member_id=second,
                member_epoch=v["memberEpoch"],
                previous_member_epoch=v["previousMemberEpoch"],
                state=MEMBER_STATES.get(v["state"], f"state {v['state']}"),
                assigned_partitions=_topic_partitions(v["assignedPartitions"]),
                partitions_pending_revocation=_topic_partitions(v["partitionsPendingRevocation"]),
            )
        ]
    if key_type == 16:
        v = v or {}
        return [
            dict(
                group_id=group,
                regular_expression=second,
                topics=v.get("topics"),
                regex_version=v.get("version"),
                resolved_at=v.get("timestamp"),
            )
        ]
    raise ValueError(key_type)


class GroupRecords:
    """Rows of the group record tables of one segment, in log order."""

    def __init__(self):
        self.rows: dict[str, list[dict]] = {t: [] for t in TABLE_NAMES}

    def add(self, key_type: int, key: bytes, value: bytes | None, place: dict) -> bool:
        """Decode one record into its rows. False when its value's version is unknown (the
        caller keeps it raw); raises UndecodableKey / UndecodableValue."""
        where = f"(log offset {place['log_offset']})"
        name = record_name(key_type)
        try:
            group, second = decode_key(key_type, key)
        except DecodeError as err:
            raise UndecodableKey(f"{name}Key: {err} {where}") from None
        version, fields = None, None
        if value is not None:
            try:
                version, fields = decode_value(key_type, value)
            except DecodeError as err:
                if key_type in TABLES:
                    raise UndecodableValue(f"{name}Value: {err} {where}") from None
                # a share/streams value our copy of a preview schema does not read: kept raw
                version = int.from_bytes(value[:2], "big", signed=True) if len(value) >= 2 else None
        tail = dict(is_tombstone=value is None, value_version=version, **place)
        if key_type in TABLES:
            if value is not None and fields is None:
                return False
            self.rows[TABLES[key_type][0]] += [{**row, **tail} for row in _rows(key_type, group, second, fields)]
            return True
        self.rows[GENERIC_TABLE].append(
            dict(
                key_type=key_type,
                record_type=name,
                group_id=group,
                member_id=second,
                fields=None if fields is None else json.dumps(fields, sort_keys=True),
                value=value if fields is None else None,
                **tail,
            )
        )
        return True

    def tables(self) -> dict[str, pa.Table]:
        schemas = {t: s for t, s in TABLES.values()} | {GENERIC_TABLE: RAW_GROUP_COORDINATOR_RECORDS}
        out = {}
        for t, rows in self.rows.items():
            schema = schemas[t]
            if not rows:
                out[t] = arrow.empty_table(schema)
                continue
            as_ms = schema  # the timestamps are epoch ms in the rows
            for at, f in enumerate(schema):
                if f.type == TS:
                    as_ms = as_ms.set(at, pa.field(f.name, pa.int64()))
            out[t] = pa.Table.from_pylist(rows, schema=as_ms).cast(schema)
        return out
