"""Hypothesis strategies of whole warehouse tables drawn from their declared contracts: the
Arrow schemas of raw and core (``pipelines.warehouse.tables.SCHEMAS``) and the dbt contracts of the
marts (``pipelines.quality.marts.MARTS``, read from ``models/marts/_marts__models.yml``).

Every column of those declarations is nullable, so every value may be null; a table may be
empty, and a table may be absent from the run (not built). Strings come from small
vocabularies so that the tables join on their keys (groups, topics, members), and a column
whose documented values are a closed set (a status, a source, a finding's name) draws from
that set: the contract allows those values, not any text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
from hypothesis import strategies as st

from pipelines.quality.marts import MARTS
from pipelines.warehouse.iceberg.schemas import SHARED_TABLES
from pipelines.warehouse.tables import (
    ASSIGNMENT_STATUSES,
    CONSUMER_GROUP_FINDINGS,
    SCHEMAS,
)
from pipelines.warehouse.warehouse import Warehouse

NAMES = ["g", "t", "m", "a", "", "<b>x</b>", "ü-1"]
PATHS = [
    "/", "/consumers", "/consumers/g/ids/g_h-1700000000000-0", "/consumers/g/owners/t/0",
    "/consumers/g/owners/t/1-0", "/consumers/g/offsets/t/0", "/brokers/ids/1", "/brokers/topics/t",
    "/brokers/topics/t/partitions/0/state", "/controller",
]
BLOBS = [b"", b"0", b"42", b"g_h-1700000000000-0-0", b'{"version":1,"partitions":{"0":[1]}}',
         b'{"jmx_port":-1,"host":"h","port":9092}', b"\xff\xfe", b"12\n"]
JSON = ['{"topicId":"AAAAAAAAAAAAAAAAAAAAAA","partitionId":0,"replicas":[1],"isr":[1],"leader":1}', "{}", "[]",
        '{"name":"t","topicId":"AAAAAAAAAAAAAAAAAAAAAA"}']
BURROW = ["OK", "WARN", "STOP", "STALL", "REWIND", "NOTFOUND", "ERR"]
EVENTS = ["topic_created", "topic_recreated", "topic_deleted", "broker_registered", "broker_fenced",
          "leader_changed", "isr_shrunk", "config_changed"]
# columns whose values are a closed set, by (table, column) first, then by column
CLOSED: dict[tuple[str | None, str], list[str]] = {
    ("raw/znodes", "source"): ["live", "snapshot"],
    ("raw/metadata_records", "source"): ["log", "snapshot"],
    ("raw/quarantine", "source"): ["offsets", "zk-snapshot", "kraft", "registry"],
    (None, "source"): ["zookeeper", "kafka"],
    ("marts/data_loss_risk", "status"): ["lost", "at_risk", "ok"],
    ("marts/consumer_lag_status", "status"): BURROW,
    (None, "status"): list(ASSIGNMENT_STATUSES),
    (None, "group_status"): BURROW,
    (None, "finding"): list(CONSUMER_GROUP_FINDINGS),
    (None, "event"): EVENTS,
    (None, "reset_to"): ["earliest", "latest", "timestamp"],
    (None, "txn_state"): ["committed", "aborted", "pending"],
    (None, "op"): ["snapshot", "create", "set", "delete"],
    (None, "trigger_op"): ["snapshot", "create", "set", "delete"],
    (None, "kind"): ["consumer_ids", "consumer_owners", "consumer_offsets", "broker_ids", "broker_topics"],
    (None, "trigger"): ["consumer", "broker", "topic", "snapshot", "first", "member_joined", "member_left"],
    (None, "group_protocol"): ["classic", "consumer"],
    (None, "protocol_type"): ["consumer", "connect"],
    (None, "timestamp_type"): ["CreateTime", "LogAppendTime"],
    (None, "assignor"): ["range", "roundrobin"],
    (None, "resource_type"): ["topic", "broker"],
    (None, "path"): PATHS,
    (None, "trigger_path"): PATHS,
    (None, "record"): JSON,
    (None, "fields"): JSON,
    (None, "record_type"): ["TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RegisterBrokerRecord"],
}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
# The keys the extractors write raw tables with, as the dbt project declares them on the
# staging models over those tables (``kaudit_key`` tests: unique and, but for the nullable
# ones, not null): a run whose raw tables break them fails ``dbt build``'s tests, as it should.
_RECORD = ("offsets_partition", "log_offset")
RAW_KEYS: dict[str, tuple[str, ...]] = {
    "raw/log_end_offsets": ("topic", "partition"),
    "raw/log_start_checkpoints": ("topic", "partition"),
    "raw/batch_timestamps": ("topic", "partition", "base_offset"),
    "raw/topic_configs": ("topic", "config_name"),
    "raw/znode_changes": ("zxid", "seq", "path"),
    "raw/offset_commits": _RECORD,
    "raw/group_metadata": _RECORD,
    "raw/group_members": (*_RECORD, "member_id"),
    "raw/group_assignments": (*_RECORD, "member_id", "topic", "partition"),
    "raw/coordinator_records": _RECORD,
}


def _closed(table: str, column: str) -> list[str] | None:
    return CLOSED.get((table, column)) or CLOSED.get((None, column))


def values(table: str, field: pa.Field) -> st.SearchStrategy:
    """One value of ``field`` of ``table`` (null included: every declared column is nullable)."""
    return st.one_of(st.none(), _non_null(table, field.name, field.type)) if field.nullable else \
        _non_null(table, field.name, field.type)


def _non_null(table: str, column: str, t: pa.DataType) -> st.SearchStrategy:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.sampled_from(_closed(table, column) or NAMES)
    if pa.types.is_binary(t):
        return st.sampled_from(BLOBS)
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        bits = t.bit_width - 1
        extreme = st.sampled_from([-(2**bits), 2**bits - 1])
        return st.one_of(st.integers(-2, 6), st.integers(0, 2**min(bits, 40) - 1), extreme) if bits > 7 else \
            st.integers(-(2**bits), 2**bits - 1)
    if pa.types.is_floating(t):
        return st.floats(-1e7, 1e9, allow_nan=False, allow_infinity=False)
    if pa.types.is_timestamp(t):
        near = st.integers(0, 3 * 24 * 3600 * 1000).map(lambda ms: T0 + timedelta(milliseconds=ms))
        return st.one_of(near, st.sampled_from([datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)]))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return st.lists(values(table, t.value_field), max_size=3)
    if pa.types.is_map(t):
        return st.lists(st.tuples(st.sampled_from(NAMES[:4]), values(table, t.item_field)), max_size=3,
                        unique_by=lambda kv: kv[0])
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: values(table, f) for f in t})
    raise NotImplementedError(f"{table}.{column}: no strategy for {t}")


def tables(table: str, schema: pa.Schema, max_rows: int = 6, key: tuple[str, ...] = ()) -> st.SearchStrategy:
    """A whole table of ``schema``: 0 to ``max_rows`` rows (empty tables included), unique and
    not null on ``key``."""
    row = st.fixed_dictionaries({f.name: _non_null(table, f.name, f.type) if f.name in key else values(table, f)
                                 for f in schema})
    rows = st.lists(row, max_size=max_rows, unique_by=(lambda r: tuple(r[c] for c in key)) if key else None)
    return rows.map(lambda rows: pa.Table.from_pylist(rows, schema=schema))


def declared() -> dict[str, pa.Schema]:
    """Every declared table: raw, core and ``marts/<name>``."""
    return {**SCHEMAS, **{f"marts/{name}": schema for name, schema in MARTS.items()}}


def runs(names: list[str] | None = None, always: tuple[str, ...] = ("core/assignment_audit",),
         max_rows: int = 6, keys: dict[str, tuple[str, ...]] | None = None) -> st.SearchStrategy:
    """A run's tables: each of ``names`` (default: every declared table) absent (None: not
    built), empty or holding rows, unique on its ``keys``; the tables of ``always`` are never
    absent."""
    schemas = declared()
    names = list(schemas) if names is None else names
    parts = {}
    for name in names:
        table = tables(name, schemas[name], max_rows, (keys or {}).get(name, ()))
        parts[name] = table if name in always else st.one_of(st.none(), table)
    return st.fixed_dictionaries(parts)


def write_run(wh: Warehouse, run_id: str, run: dict[str, pa.Table | None]) -> None:
    """The run's tables into the warehouse the way its steps publish them: each step's tables
    (``generated`` for the tables several steps share, ``main`` for the others) written in one
    transaction and published together; an empty table has no rows but is written."""
    for step, shared in (("generated", True), ("main", False)):
        with wh.transaction(run_id, step) as tx:
            for name, data in run.items():
                if data is not None and (name in SHARED_TABLES) == shared:
                    tx.write(name, data)
