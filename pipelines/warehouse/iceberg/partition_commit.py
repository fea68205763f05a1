"""A partition of an Iceberg table replaced by Arrow batches in one snapshot (pyiceberg).

pyiceberg's ``Transaction.delete(filter)`` followed by one ``append`` per batch stages a
snapshot per operation (a delete, then an append per batch), and pyiceberg 0.12 applies every
update staged so far, with a deep copy of the whole table metadata, each time a producer reads
the transaction's metadata: the cost of a commit grows with the operations in it and with the
table's history (its snapshots). Here a step's rows of a table are one ``overwrite`` snapshot:
the data files of the partition (``run_id``, and ``step`` in a shared table) removed, the
batches written as new data files and added, read from the staged files one batch at a time.

The partition's data files are removed whole, which is exact only where each of them holds
rows of that partition alone: they are identity-partitioned by the partition's columns (the
warehouse's tables are) and carry no delete files (rows deleted by position). Otherwise
:func:`partition_files` answers None and the caller replaces the rows with pyiceberg's delete,
which rewrites what it must.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import pyarrow as pa


def partition_filter(partition: dict[str, str]):
    """The pyiceberg row filter of ``partition``'s rows (each column equal to its value)."""
    from pyiceberg.expressions import AlwaysTrue, And, EqualTo

    where = AlwaysTrue()
    for column, value in partition.items():
        where = And(where, EqualTo(column, value))
    return where


def partition_files(txn, io, branch: str, partition: dict[str, str]) -> list | None:
    """The data files of ``branch`` of the transaction's table in ``partition`` (column ->
    value), as the transaction has staged it; None when one of them may hold other rows or has
    rows deleted by position (see the module)."""
    from pyiceberg.table import DataScan

    meta = txn.table_metadata
    snap = meta.snapshot_by_name(branch)
    if snap is None:  # nothing written on the branch (nor on main) yet
        return []
    scan = DataScan(table_metadata=meta, io=io, row_filter=partition_filter(partition), snapshot_id=snap.snapshot_id)
    tasks = list(scan.plan_files())
    if any(task.delete_files for task in tasks):
        return None
    specs, schema = meta.specs(), meta.schema()
    for task in tasks:
        fields = specs[task.file.spec_id].fields
        names = [schema.find_column_name(f.source_id) for f in fields]
        if sorted(names) != sorted(partition) or any(
                str(f.transform) != "identity" or task.file.partition[pos] != partition[name]
                for pos, (f, name) in enumerate(zip(fields, names, strict=True))):
            return None
    return [task.file for task in tasks]


def replace(txn, io, branch: str, old_files: list, tables: Iterable[pa.Table]) -> int:
    """Stages in ``txn`` one snapshot on ``branch``: ``old_files`` removed, the rows of
    ``tables`` (each of the table's Arrow schema, as pyiceberg writes it) written to new data
    files and added; returns the rows added. Nothing is staged when there is nothing to remove
    and no table to write."""
    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible, _dataframe_to_data_files

    meta = txn.table_metadata  # (read once: each read applies and copies the staged updates)
    tables = iter(tables)
    first = next(tables, None)
    if first is None and not old_files:
        return 0
    rows, counter = 0, itertools.count(0)  # one write, its files numbered in turn
    with txn.update_snapshot(branch=branch).overwrite() as producer:
        for data_file in old_files:
            producer.delete_data_file(data_file)
        for data in itertools.chain([first] if first is not None else [], tables):
            _check_pyarrow_schema_compatible(meta.schema(), provided_schema=data.schema,
                                             format_version=meta.format_version)
            if not data.num_rows:
                continue
            for data_file in _dataframe_to_data_files(table_metadata=meta, df=data, io=io,
                                                      write_uuid=producer.commit_uuid, counter=counter):
                producer.append_data_file(data_file)
            rows += data.num_rows
    return rows
