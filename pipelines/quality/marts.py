"""The dbt marts as readers outside dbt see them: where a run's mart lives and its contract
columns (CONTRACT.md, "marts") as Arrow schemas. A mart may carry more columns; a reader
selects these. ``consumer_lag_status`` has no fixed columns yet beyond its key and status."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from pipelines.tables import TS
from pipelines.warehouse import Warehouse

_KEY = [("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32())]

MARTS = {
    "consumer_lag": pa.schema(
        [
            ("source", pa.string()),
            *_KEY,
            ("committed_offset", pa.int64()),
            ("log_end_offset", pa.int64()),
            ("lag", pa.int64()),
            ("committed_at", TS),
        ]
    ),
    "commit_frequency": pa.schema(
        [*_KEY, ("window_start", TS), ("commits", pa.int64()), ("first_commit_at", TS), ("last_commit_at", TS)]
    ),
    "offset_regressions": pa.schema(
        [
            *_KEY,
            ("log_offset", pa.int64()),
            ("previous_committed_offset", pa.int64()),
            ("committed_offset", pa.int64()),
            ("regressed_by", pa.int64()),
            ("committed_at", TS),
        ]
    ),
    "offset_storage_drift": pa.schema(
        [*_KEY, ("zk_offset", pa.int64()), ("kafka_offset", pa.int64()), ("drift", pa.int64())]
    ),
    "consumer_lag_status": pa.schema([("source", pa.string()), *_KEY, ("status", pa.string())]),
}


def mart_dir(warehouse: Warehouse, name: str, run_id: str) -> Path:
    return warehouse.partition_dir(f"marts/{name}", run_id)


def mart_files(warehouse: Warehouse, name: str, run_id: str) -> list[Path]:
    """The Parquet files of the run's mart (hidden ``_``/``.`` files skipped); [] when not built."""
    part = mart_dir(warehouse, name, run_id)
    if not part.is_dir():
        return []
    return sorted(
        p
        for p in part.rglob("*.parquet")
        if not any(s.startswith(("_", ".")) for s in p.relative_to(part).parts)
    )


def read_mart(warehouse: Warehouse, name: str, run_id: str) -> pa.Table | None:
    """The run's mart conformed to its contract columns (extra columns kept after them, missing
    contract columns as nulls), or None when the mart was not built for the run."""
    files = mart_files(warehouse, name, run_id)
    if not files:
        return None
    data = ds.dataset([str(f) for f in files], format="parquet").to_table()
    schema = MARTS[name]
    columns, fields = [], []
    for f in schema:
        if f.name in data.column_names:
            col = data.column(f.name)
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # keep the mart's own type rather than fail the reader
            columns.append(col)
            fields.append(pa.field(f.name, col.type))
        else:
            columns.append(pa.nulls(data.num_rows, f.type))
            fields.append(f)
    for name_ in data.column_names:
        if name_ not in schema.names and name_ != "run_id":
            columns.append(data.column(name_))
            fields.append(data.schema.field(name_))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))
