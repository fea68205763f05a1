"""The Arrow writer of a step (``pipelines/warehouse/writer.py``): statistics for the chosen
columns only, and no warning about the others."""

from __future__ import annotations

import logging

import pyarrow as pa

from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse
from pipelines.warehouse.writer import TableWriter

TABLE = "raw/group_members"


def test_statistics_of_the_chosen_columns_only_and_no_warning_of_the_others(tmp_path, caplog):
    wh = Warehouse(tmp_path / "warehouse")
    schema = SCHEMAS[TABLE]
    rows = [{name: None for name in schema.names} | {"group_id": g, "member_id": f"m-{g}"} for g in ("b", "a", "c")]
    writer = TableWriter(wh, TABLE, schema, wh.partition(TABLE, "r1", "s"), statistics=["group_id"])
    writer.write(pa.Table.from_pylist(rows, schema=schema))
    with caplog.at_level(logging.DEBUG, logger="pyiceberg"):
        (data_file,) = writer.close()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    ice = wh.table(TABLE, schema)
    ids = {f.name: f.field_id for f in ice.schema().fields}
    assert data_file.record_count == 3
    assert data_file.lower_bounds[ids["group_id"]] == b"a" and data_file.upper_bounds[ids["group_id"]] == b"c"
    assert ids["member_id"] not in data_file.lower_bounds  # no statistics: no bounds
