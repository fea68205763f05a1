"""The warehouse tables the dbt project reads, as the ``kaudit_sources`` var of a run.

Each dbt source (``_<source>__sources.yml``) is a view ``<schema>.<table>`` over one run's
Parquet partition, created by the on-run-start macro ``kaudit_register_sources``. Its columns
come from ``pipelines.tables`` (the one declaration of those schemas), converted to Spark SQL
types here; a partition the run does not have becomes an empty view with the same columns.
"""

from __future__ import annotations

import pyarrow as pa

from pipelines.tables import SCHEMAS
from pipelines.warehouse import Warehouse

# dbt relation (schema.table) -> warehouse table.
SOURCES: dict[str, str] = {
    "kaudit_raw.offset_commits": "raw/offset_commits",
    "kaudit_raw.log_end_offsets": "raw/log_end_offsets",
    "kaudit_raw.metadata_records": "raw/metadata_records",
    "kaudit_raw.znode_changes": "raw/znode_changes",
    "kaudit_raw.group_metadata": "raw/group_metadata",
    "kaudit_raw.group_members": "raw/group_members",
    "kaudit_raw.group_assignments": "raw/group_assignments",
    "kaudit_core.zk_offsets": "core/zk_offsets",
    "kaudit_core.partition_owners": "core/partition_owners",
    "kaudit_core.assignment_audit": "core/assignment_audit",
    "kaudit_core.rebalance_states": "core/rebalance_states",
}

_SCALARS = {
    pa.string(): "string",
    pa.large_string(): "string",
    pa.binary(): "binary",
    pa.bool_(): "boolean",
    pa.int8(): "tinyint",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.date32(): "date",
}


def spark_type(dtype: pa.DataType) -> str:
    """The Spark SQL type of an Arrow type (the subset the warehouse schemas use)."""
    if dtype in _SCALARS:
        return _SCALARS[dtype]
    if pa.types.is_timestamp(dtype):
        return "timestamp"
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return f"array<{spark_type(dtype.value_type)}>"
    if pa.types.is_struct(dtype):
        return "struct<" + ",".join(f"`{f.name}`:{spark_type(f.type)}" for f in dtype) + ">"
    raise TypeError(f"no Spark SQL type for Arrow type {dtype}")


def source_vars(warehouse: Warehouse, run_id: str) -> dict[str, dict]:
    """``{"<schema>.<table>": {"path", "exists", "columns": [[name, type], ...]}}`` for the run."""
    out: dict[str, dict] = {}
    for relation, table in SOURCES.items():
        part = warehouse.partition_dir(table, run_id)
        exists = part.is_dir() and any(part.glob("*.parquet"))
        out[relation] = {
            "path": str(part),
            "exists": exists,
            "columns": [[f.name, spark_type(f.type)] for f in SCHEMAS[table]],
        }
    return out
