"""Reading a run's table, the one way: its files, its declared schema, the check of one
against the other, its row count, and its Arrow view (:func:`read_arrow`). The Spark view
(:func:`pipelines.spark.io.read_spark`) reads the same checked files.

Declared schemas: raw and core tables in :mod:`pipelines.warehouse.tables`, marts in their dbt contracts
(``models/marts/_marts__models.yml``, read by :mod:`pipelines.quality.marts`). A file whose
columns or types differ from the declaration is an error naming the file and the columns
(:class:`SchemaMismatch`), never a column of nulls or a silent cast; the only columns a raw or
core file may lack are the KRaft-only ones of ``ADDED_COLUMNS`` (null where the ZooKeeper
registry built the table). ``run_id`` is the hive partition (``<table>/run_id=<id>/``), not a
column of the files; the views add it.

In an Iceberg warehouse (:class:`~pipelines.warehouse.iceberg.warehouse.IcebergWarehouse`) the same
functions read the run's partition of the Iceberg table (marts: ``marts.<name>``, built by dbt)
at the snapshot the run's ledger recorded (a time-travel read: a later run, or a later commit
of the same table, never changes what a read of this run returns), cast back to the declared
schema; row counts come from the manifests.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pipelines.errors import StepError
from pipelines.quality.marts import DECLARATION, MARTS, PARTITION_COLUMN
from pipelines.warehouse.tables import ADDED_COLUMNS, RAW, SCHEMAS
from pipelines.warehouse.directory import Warehouse


class SchemaMismatch(StepError):
    """A file of a run's table whose columns or types are not the table's declared schema."""


def declared_schema(table: str) -> pa.Schema:
    """The Arrow schema of ``table``'s files (``raw/...``, ``core/...`` or ``marts/...``), no ``run_id``."""
    if table.startswith("marts/"):
        return MARTS[table.split("/", 1)[1]]
    return SCHEMAS[table]


def parquet_files(directory: Path) -> list[Path]:
    """The Parquet files under ``directory``, sorted; files and dirs whose name starts with ``_``
    or ``.`` (Spark's markers, staging) are skipped. [] when ``directory`` does not exist."""
    if not directory.is_dir():
        return []
    files = directory.rglob("*.parquet")
    return sorted(p for p in files if not any(s.startswith(("_", ".")) for s in p.relative_to(directory).parts))


def check_schema(table: str, schema: pa.Schema, where: Path | str) -> None:
    """Raise :class:`SchemaMismatch` unless ``schema`` (a file's) has exactly the declared columns
    of ``table`` with their types (nullability aside); ``where`` names the file."""
    declared = declared_schema(table)
    mart = table.startswith("marts/")
    optional = set() if mart else set(ADDED_COLUMNS.get(table, ()))
    got = {f.name: f.type for f in schema if f.name != PARTITION_COLUMN}
    problems = [f"missing column {f.name} ({f.type})" for f in declared if f.name not in got and f.name not in optional]
    problems += [f"column {f.name} is {got[f.name]}, declared {f.type}" for f in declared
                 if f.name in got and got[f.name] != f.type]
    problems += [f"undeclared column {c}" for c in got if c not in declared.names]
    if problems:
        what = (f"mart {table.split('/', 1)[1]} does not match its contract ({DECLARATION})" if mart
                else f"{table} does not match its declared schema (pipelines/warehouse/tables.py)")
        raise SchemaMismatch(f"{where}: {what}: " + "; ".join(problems))


def table_files(warehouse: Warehouse, table: str, run_id: str) -> list[Path]:
    """The Parquet files of the run's partition of ``table``, each checked against its declared
    schema (footers only); [] when the run does not have the table."""
    files = parquet_files(warehouse.partition_dir(table, run_id))
    for f in files:
        check_schema(table, pq.read_schema(f), f)
    return files


def row_count(warehouse: Warehouse, table: str, run_id: str) -> int | None:
    """Rows of the run's partition of ``table``, from the Parquet footers (no data read); None
    when the run does not have the table."""
    if warehouse.format == "iceberg":  # from the manifests of the snapshot the run recorded
        return warehouse.row_count(table, run_id) if warehouse.exists(table, run_id) else None
    part = warehouse.partition_dir(table, run_id)
    if not part.is_dir():
        return None
    return sum(pq.ParquetFile(f).metadata.num_rows for f in parquet_files(part))


def run_rows(warehouse: Warehouse, run_id: str) -> int:
    """Rows of every raw table of the run, from the Parquet footers."""
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
    ``columns`` and ``filter`` (a ``pyarrow.dataset`` expression) are pushed down to the files."""
    schema = declared_schema(table)
    names = schema.names if columns is None else columns
    files = [] if warehouse.format == "iceberg" else table_files(warehouse, table, run_id)
    if warehouse.format == "iceberg":  # the snapshot the run recorded, its partition
        if filter is None:
            data = warehouse.read_arrow(table, run_id, schema, names)
        else:  # (the filter's columns may be others than ``columns``)
            data = warehouse.read_arrow(table, run_id, schema).filter(filter).select(names)
    elif files:
        dataset = ds.dataset([str(f) for f in files], format="parquet", schema=schema)
        data = dataset.to_table(columns=names, filter=filter)
    else:  # (not schema.empty_table(): that makes pyarrow import pandas, ~0.4 s)
        data = pa.Table.from_batches([], pa.schema([schema.field(c) for c in names]))
    if with_run_id:
        data = data.append_column(PARTITION_COLUMN, pa.array([run_id] * data.num_rows, pa.string()))
    return data


def read_built(warehouse: Warehouse, table: str, run_id: str) -> pa.Table | None:
    """The run's ``table`` (declared columns, no ``run_id``) when a step wrote it for the run;
    None when it did not (a mart dbt did not build). A mart built with no rows is an empty
    table: Spark's ``insert overwrite`` of no rows leaves its run's directory without files."""
    if not warehouse.exists(table, run_id):
        return None
    return read_arrow(warehouse, table, run_id, with_run_id=False)
