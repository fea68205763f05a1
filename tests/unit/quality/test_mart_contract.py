"""The marts' one declaration (models/marts/_marts__models.yml) is what the readers enforce:
a mart table missing a declared column, with another type, or with an undeclared column is an
error naming the table and the column, never a column of nulls."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
import yaml

from pipelines.quality.marts import (
    MARTS,
    MartContractError,
    declaration_path,
    load_contracts,
)
from pipelines.warehouse.reading import SchemaMismatch, read_arrow

T = datetime(2026, 1, 1, tzinfo=UTC)
ROW = dict(source="kafka", group_id="g", topic="t", partition=0, broker_id=None, offsets_partition=3, log_offset=9,
           zxid=None, previous_committed_offset=20, committed_offset=5, regressed_by=15, committed_at=T)


def _write(warehouse, schema: pa.Schema, row: dict) -> str:
    """The mart ``offset_regressions`` of run ``r`` as an Iceberg table of ``schema`` (as another
    writer than kaudit's declarations could make it), recorded in the run's ledger; its name."""
    from pipelines.warehouse.iceberg import schemas

    table = "marts/offset_regressions"
    ident = warehouse.ident(table)
    warehouse.catalog.create_namespace_if_not_exists(ident[:-1])
    if warehouse.catalog.table_exists(ident):
        warehouse.catalog.drop_table(ident)
    ice = warehouse.catalog.create_table(ident, schema=schemas.iceberg_schema(table, schema))
    ice.append(schemas.to_write(table, pa.Table.from_pylist([{k: row[k] for k in schema.names}], schema=schema),
                                {"run_id": "r"}, schema))
    warehouse.record("r", "dbt", [(table, ice.current_snapshot().snapshot_id, 1)])
    return warehouse.spark_identifier(table)


def read_mart(warehouse, name):
    return read_arrow(warehouse, f"marts/{name}", "r", with_run_id=False)


def test_schemas_are_the_declared_columns_and_types():
    declared = yaml.safe_load(declaration_path().read_text())["models"]
    spark_to_arrow = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_(),
                      "double": pa.float64(), "timestamp": pa.timestamp("ms", tz="UTC")}
    assert set(MARTS) == {m["name"] for m in declared}
    for model in declared:
        assert model["config"]["contract"]["enforced"] is True
        assert [(f.name, f.type) for f in MARTS[model["name"]]] == [
            (c["name"], spark_to_arrow[c["data_type"]]) for c in model["columns"] if c["name"] != "run_id"
        ]


def test_a_conforming_mart_reads(warehouse):
    _write(warehouse, MARTS["offset_regressions"], ROW)
    assert read_mart(warehouse, "offset_regressions").to_pylist() == [ROW]
    assert read_mart(warehouse, "consumer_lag").num_rows == 0  # not built


def test_a_missing_declared_column_fails_the_reader(warehouse):
    schema = MARTS["offset_regressions"]
    path = _write(warehouse, schema.remove(schema.get_field_index("regressed_by")), ROW)
    with pytest.raises(SchemaMismatch, match=rf"{path}: mart offset_regressions .*missing column regressed_by"):
        read_mart(warehouse, "offset_regressions")


def test_a_wrong_type_or_an_undeclared_column_fails_the_reader(warehouse):
    schema = MARTS["offset_regressions"]
    retyped = schema.set(schema.get_field_index("partition"), pa.field("partition", pa.int64()))
    _write(warehouse, retyped, ROW)
    with pytest.raises(SchemaMismatch, match="column partition is long, declared int"):
        read_mart(warehouse, "offset_regressions")
    _write(warehouse, schema.append(pa.field("origin", pa.string())), {**ROW, "origin": "kafka"})
    with pytest.raises(SchemaMismatch, match="undeclared column origin"):
        read_mart(warehouse, "offset_regressions")


def test_a_mart_without_an_enforced_contract_is_refused(tmp_path):
    declared = yaml.safe_load(declaration_path().read_text())
    del declared["models"][0]["config"]
    path = tmp_path / "_marts__models.yml"
    path.write_text(yaml.safe_dump(declared))
    with pytest.raises(MartContractError, match="has no enforced contract"):
        load_contracts(path)
