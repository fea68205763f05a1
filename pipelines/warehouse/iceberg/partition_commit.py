"""A partition of an Iceberg table replaced by Arrow batches in one snapshot (pyiceberg).

pyiceberg's ``Transaction.delete(filter)`` followed by one ``append`` per batch stages a
snapshot per operation (a delete, then an append per batch), and pyiceberg 0.12 applies every
update staged so far, with a deep copy of the whole table metadata, each time a producer reads
the transaction's metadata: the cost of a commit grows with the operations in it and with the
table's history (its snapshots). Here a step's rows of a table are one ``overwrite`` snapshot:
the data files of the partition (``run_id``, and ``step`` in a shared table) removed, and the
data files the step's writer wrote as its batches came (:mod:`pipelines.warehouse.writer`) added.

The partition's data files are removed whole, which is exact only where each of them holds
rows of that partition alone: they are identity-partitioned by the partition's columns (the
warehouse's tables are) and carry no delete files (rows deleted by position). Otherwise
:func:`partition_files` answers None and the caller replaces the rows with pyiceberg's delete,
which rewrites what it must.
"""

from __future__ import annotations


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


def replace(txn, branch: str, old_files: list, new_files: list) -> None:
    """Stages in ``txn`` one snapshot on ``branch``: ``old_files`` removed, ``new_files`` (data
    files a step wrote, :mod:`pipelines.warehouse.writer`) added. Nothing is staged when there is
    nothing to remove and nothing to add."""
    if not old_files and not new_files:
        return
    with txn.update_snapshot(branch=branch).overwrite() as producer:
        for data_file in old_files:
            producer.delete_data_file(data_file)
        for data_file in new_files:
            producer.append_data_file(data_file)
