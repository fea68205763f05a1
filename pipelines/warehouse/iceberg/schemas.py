"""The declared Arrow schemas (:mod:`pipelines.warehouse.tables`) as Iceberg schemas: the one mapping.

Every warehouse table ``<layer>/<name>`` is the Iceberg table ``<layer>.<name>`` of the catalog
(namespace = layer). Its columns are the declared ones, in order, then the columns the Parquet
layout keeps in directory names:

- ``run_id`` (string, required), the table's identity partition: a run's rows are one
  partition, replaced whole when the step runs again, pruned by every read of one run;
- ``step`` (string, required), second identity partition, in the tables several steps of a
  run write (``SHARED_TABLES``: ``raw/quarantine``, ``raw/znodes``), where the Parquet layout
  keeps one ``part-<step>.parquet`` per step.

Types (Iceberg's primitive types are fewer than Arrow's; a read casts back to the declared
Arrow schema, :func:`to_declared`):

====================  =====================  ===========================================
Arrow (declared)      Iceberg                 note
====================  =====================  ===========================================
bool                  boolean
int8, int16, int32    int                     Iceberg has no narrower integer
int64                 long
float32, float64      float, double           (the marts' double columns)
string                string
binary                binary
timestamp[ms, UTC]    timestamptz             microseconds; every ms value fits exactly
list<T>               list<T>                 element optional
struct<...>           struct<...>             fields optional
map<K, V>             map<K, V>               key required (Iceberg's rule), value optional
====================  =====================  ===========================================

Every declared column is nullable (the contracts allow nulls), so every Iceberg field but the
partition columns and map keys is optional. Field ids are assigned depth first from 1, so the
same declared schema always maps to the same Iceberg schema.

The declarations (:func:`declaration`): raw and core tables in :mod:`pipelines.warehouse.tables`, marts
(``marts/<name>``: the Iceberg table ``marts.<name>`` dbt builds) in their dbt contracts
(:data:`pipelines.quality.marts.MARTS`). A timestamp Spark wrote in microseconds is read back
floored to the declared milliseconds, as the Parquet layout's Spark writes store it
(``spark.sql.parquet.outputTimestampType`` ``TIMESTAMP_MILLIS``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from pipelines.warehouse.tables import SCHEMAS

RUN_ID = "run_id"
STEP = "step"
SHARED_TABLES = frozenset({"raw/quarantine", "raw/znodes"})


class UnmappedType(TypeError):
    """An Arrow type the mapping has no Iceberg type for (a declared schema grew one)."""


def declaration(table: str) -> pa.Schema:
    """The declared Arrow schema of warehouse ``table`` (``raw/...``, ``core/...``, ``marts/...``)."""
    if table.startswith("marts/"):
        from pipelines.quality.marts import MARTS  # (the dbt contracts: read only where a mart is)

        return MARTS[table.split("/", 1)[1]]
    return SCHEMAS[table]


def identifier(table: str) -> tuple[str, str]:
    """``raw/znodes`` -> ``("raw", "znodes")``: the namespace is the layer."""
    layer, _, name = table.partition("/")
    if not layer or not name or "/" in name:
        raise ValueError(f"not a warehouse table <layer>/<name>: {table!r}")
    return layer, name


def partition_columns(table: str) -> tuple[str, ...]:
    return (RUN_ID, STEP) if table in SHARED_TABLES else (RUN_ID,)


class _Ids:
    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


def _iceberg_type(t: pa.DataType, ids: _Ids) -> IcebergType:
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return IntegerType()
    if pa.types.is_int64(t):
        return LongType()
    if pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return BinaryType()
    if pa.types.is_timestamp(t) and t.tz in ("UTC", "+00:00") and t.unit in ("s", "ms", "us"):
        return TimestamptzType()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        element_id = ids.next()
        return ListType(element_id, _iceberg_type(t.value_type, ids), element_required=False)
    if pa.types.is_struct(t):
        fields = [(ids.next(), t.field(i)) for i in range(t.num_fields)]
        return StructType(*[NestedField(i, f.name, _iceberg_type(f.type, ids), required=False) for i, f in fields])
    if pa.types.is_map(t):
        key_id, value_id = ids.next(), ids.next()
        return MapType(key_id, _iceberg_type(t.key_type, ids), value_id, _iceberg_type(t.item_type, ids),
                       value_required=False)
    raise UnmappedType(f"no Iceberg type for Arrow {t}")


def iceberg_schema(table: str, declared: pa.Schema | None = None) -> Schema:
    """The Iceberg schema of warehouse ``table``: its declared columns, then its partition columns."""
    declared = declaration(table) if declared is None else declared
    ids = _Ids()
    top = [(ids.next(), f) for f in declared]
    parts = [(ids.next(), name) for name in partition_columns(table)]
    fields = [NestedField(i, f.name, _iceberg_type(f.type, ids), required=False) for i, f in top]
    fields += [NestedField(i, name, StringType(), required=True) for i, name in parts]
    return Schema(*fields)


def partition_spec(schema: Schema, table: str) -> PartitionSpec:
    """Identity partitions on ``run_id`` (and ``step`` for a shared table)."""
    return PartitionSpec(*[
        PartitionField(source_id=schema.find_field(name).field_id, field_id=1000 + i,
                       transform=IdentityTransform(), name=name)
        for i, name in enumerate(partition_columns(table))
    ])


def _write_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Iceberg's type of ``t`` reads back as (what a batch is cast to before a write)."""
    if pa.types.is_int8(t) or pa.types.is_int16(t):
        return pa.int32()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field("element", _write_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _write_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", _write_type(t.key_type), nullable=False),
                       pa.field("value", _write_type(t.item_type)))
    return t


def write_schema(table: str, declared: pa.Schema | None = None) -> pa.Schema:
    """The Arrow schema a batch of ``table`` is cast to before pyiceberg writes it (Iceberg's
    types, partition columns last)."""
    declared = declaration(table) if declared is None else declared
    fields = [pa.field(f.name, _write_type(f.type)) for f in declared]
    fields += [pa.field(name, pa.string(), nullable=False) for name in partition_columns(table)]
    return pa.schema(fields)


def to_write(table: str, data: pa.Table, partition: dict[str, str], declared: pa.Schema | None = None) -> pa.Table:
    """``data`` (of the declared schema) as a batch of ``write_schema``: cast, partition values added."""
    schema = write_schema(table, declared)
    cols = [data.column(f.name).cast(schema.field(f.name).type) for f in (declaration(table) if declared is None
                                                                          else declared)]
    cols += [pa.array([partition[name]] * data.num_rows, pa.string()) for name in partition_columns(table)]
    return pa.Table.from_arrays(cols, schema=schema)


def to_declared(table: str, data: pa.Table, declared: pa.Schema | None = None) -> pa.Table:
    """Rows read from the Iceberg table as ``table``'s declared Arrow schema (partition columns
    dropped; a timestamp finer than its declared unit floored to it)."""
    declared = declaration(table) if declared is None else declared
    return pa.Table.from_arrays([_to_type(data.column(f.name), f.type) for f in declared], schema=declared)


_UNITS = {"s": "second", "ms": "millisecond", "us": "microsecond"}


def _to_type(column, t: pa.DataType):
    have = column.type
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(have) and have.unit != t.unit and t.unit in _UNITS:
        column = pc.floor_temporal(column, unit=_UNITS[t.unit])
        return column.cast(t, safe=False)  # floored: the cast drops only zeros
    return column.cast(t)
