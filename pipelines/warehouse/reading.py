"""Reading a run's table, the one way: its declared schema, its row count and its Arrow view
(:func:`read_arrow`). The Spark view (:func:`pipelines.spark.io.read_spark`) reads the same
snapshot.

Declared schemas: raw and core tables in :mod:`pipelines.warehouse.tables`, marts in their dbt contracts
(``models/marts/_marts__models.yml``, read by :mod:`pipelines.quality.marts`). A run's table is
read at the snapshot the run's ledger recorded (a time-travel read: a later run, or a later
commit of the same table, never changes what a read of this run returns), filtered to the
run's partition and cast back to the declared schema; row counts come from the manifests.
A table whose columns or types differ from the declaration is an error naming the table and
the columns (:class:`SchemaMismatch`), never a column of nulls or a silent cast; the only
columns a raw or core table may lack are the KRaft-only ones of ``ADDED_COLUMNS``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds

from pipelines.errors import StepError
from pipelines.quality.marts import DECLARATION, MARTS, PARTITION_COLUMN
from pipelines.warehouse.tables import ADDED_COLUMNS, RAW, SCHEMAS
from pipelines.warehouse.warehouse import Warehouse


class SchemaMismatch(StepError):
    """A file of a run's table whose columns or types are not the table's declared schema."""


def declared_schema(table: str) -> pa.Schema:
    """The Arrow schema of ``table``'s files (``raw/...``, ``core/...`` or ``marts/...``), no ``run_id``."""
    if table.startswith("marts/"):
        return MARTS[table.split("/", 1)[1]]
    return SCHEMAS[table]


def check_schema(table: str, schema, where: str) -> None:
    """Raise :class:`SchemaMismatch` unless ``schema`` (the Iceberg table's, at the snapshot read)
    has exactly the declared columns of ``table`` with the Iceberg types they map to, and its
    partition columns (nullability aside); ``where`` names the table."""
    from pipelines.warehouse.iceberg.schemas import iceberg_schema, partition_columns

    mart = table.startswith("marts/")
    declared = {f.name: str(f.field_type) for f in iceberg_schema(table, declared_schema(table)).fields}
    optional = set() if mart else set(ADDED_COLUMNS.get(table, ()))
    optional |= set(partition_columns(table))
    got = {f.name: str(f.field_type) for f in schema.fields}
    problems = [f"missing column {c} ({t})" for c, t in declared.items() if c not in got and c not in optional]
    problems += [f"column {c} is {got[c]}, declared {t}" for c, t in declared.items() if c in got and got[c] != t]
    problems += [f"undeclared column {c}" for c in got if c not in declared]
    if problems:
        what = (f"mart {table.split('/', 1)[1]} does not match its contract ({DECLARATION})" if mart
                else f"{table} does not match its declared schema (pipelines/warehouse/tables.py)")
        raise SchemaMismatch(f"{where}: {what}: " + "; ".join(problems))


def row_count(warehouse: Warehouse, table: str, run_id: str) -> int | None:
    """Rows of the run's partition of ``table``, from the manifests of the snapshot the run
    recorded (no data read); None when the run does not have the table."""
    return warehouse.row_count(table, run_id) if warehouse.exists(table, run_id) else None


def run_rows(warehouse: Warehouse, run_id: str) -> int:
    """Rows of every raw table of the run, from the manifests."""
    return sum(row_count(warehouse, table, run_id) or 0 for table in RAW)


def read_arrow(
    warehouse: Warehouse,
    table: str,
    run_id: str,
    columns: list[str] | None = None,
    filter: ds.Expression | None = None,  # noqa: A002 - pyarrow's name
    with_run_id: bool = True,
) -> pa.Table:
    """The run's ``table`` as Arrow: its declared columns (or ``columns``) and ``run_id`` (unless
    ``with_run_id`` is False); empty with those columns when the run does not have the table.
    ``columns`` are pushed down to the scan; ``filter`` is a ``pyarrow.dataset`` expression
    over the declared columns."""
    schema = declared_schema(table)
    names = schema.names if columns is None else columns
    sid = warehouse.snapshot_id(table, run_id)
    if sid is not None:
        check_schema(table, warehouse.schema_at(table, sid), warehouse.spark_identifier(table))
    if filter is None:
        data = warehouse.read_arrow(table, run_id, schema, names)
    else:  # (the filter's columns may be others than ``columns``)
        data = warehouse.read_arrow(table, run_id, schema).filter(filter).select(names)
    if with_run_id:
        data = data.append_column(PARTITION_COLUMN, pa.array([run_id] * data.num_rows, pa.string()))
    return data


def read_built(warehouse: Warehouse, table: str, run_id: str) -> pa.Table | None:
    """The run's ``table`` (declared columns, no ``run_id``) when a step wrote it for the run;
    None when it did not (a mart dbt did not build); a mart built with no rows is an empty table."""
    if not warehouse.exists(table, run_id):
        return None
    return read_arrow(warehouse, table, run_id, with_run_id=False)
