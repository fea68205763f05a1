"""The one mapping of the declared Arrow schemas to Iceberg schemas (pipelines/warehouse/iceberg/schemas.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestamptzType,
)

from pipelines.warehouse.iceberg import schemas
from pipelines.warehouse.tables import SCHEMAS

# Arrow type -> the Iceberg type the mapping must give (docs/iceberg.md's table)
KNOWN = [
    (pa.bool_(), BooleanType),
    (pa.int8(), IntegerType),
    (pa.int16(), IntegerType),
    (pa.int32(), IntegerType),
    (pa.int64(), LongType),
    (pa.string(), StringType),
    (pa.binary(), BinaryType),
    (pa.timestamp("ms", tz="UTC"), TimestamptzType),
    (pa.list_(pa.int32()), ListType),
    (pa.struct([("a", pa.int64())]), StructType),
    (pa.map_(pa.string(), pa.int16()), MapType),
]


@pytest.mark.parametrize(("arrow", "iceberg"), KNOWN, ids=[str(a) for a, _ in KNOWN])
def test_type_table(arrow, iceberg):
    schema = schemas.iceberg_schema("raw/test", pa.schema([("c", arrow)]))
    assert isinstance(schema.find_field("c").field_type, iceberg)
    assert not schema.find_field("c").required


def test_every_declared_table_maps_with_its_partitions_last():
    for table, declared in SCHEMAS.items():
        schema = schemas.iceberg_schema(table)
        names = [f.name for f in schema.fields]
        parts = schemas.partition_columns(table)
        assert names == [*declared.names, *parts], table
        assert all(schema.find_field(p).required for p in parts)
        spec = schemas.partition_spec(schema, table)
        assert [f.name for f in spec.fields] == list(parts)
        assert schemas.iceberg_schema(table) == schema  # the same ids every time


def test_shared_tables_are_partitioned_by_step_too():
    assert schemas.partition_columns("raw/quarantine") == ("run_id", "step")
    assert schemas.partition_columns("raw/znodes") == ("run_id", "step")
    assert schemas.partition_columns("core/assignment_audit") == ("run_id",)


def test_unmapped_type_is_a_typed_error():
    with pytest.raises(schemas.UnmappedType, match="halffloat"):
        schemas.iceberg_schema("raw/test", pa.schema([("c", pa.float16())]))


def test_identifier():
    assert schemas.identifier("raw/znodes") == ("raw", "znodes")
    for bad in ("znodes", "raw/", "raw/a/b"):
        with pytest.raises(ValueError):
            schemas.identifier(bad)


def test_write_and_read_back_casts_are_lossless():
    # narrow ints, ms timestamps and nested lists of structs: through the write schema and back
    declared = SCHEMAS["raw/share_partition_states"]
    row = {"group_id": "g", "partition": 2**31 - 1, "create_timestamp": datetime(2024, 2, 29, 23, 59, 59, 999000, UTC),
           "state_batches": [{"first_offset": -(2**63), "last_offset": 2**63 - 1, "delivery_state": -128,
                              "delivery_state_name": "acked", "delivery_count": 32767}]}
    data = pa.Table.from_pylist([row, {}], schema=declared)
    written = schemas.to_write("raw/share_partition_states", data, {"run_id": "r1"})
    assert written.schema == schemas.write_schema("raw/share_partition_states")
    assert written.column("run_id").to_pylist() == ["r1", "r1"]
    assert written.schema.field("create_timestamp").type == pa.timestamp("us", tz="UTC")
    assert schemas.to_declared("raw/share_partition_states", written).equals(data)
