"""The tables a dbt build committed to an Iceberg warehouse, recorded in its ledger.

On an Iceberg warehouse dbt builds the marts (``kaudit.marts.<model>``, partitioned by
``run_id``) and the history (``kaudit.snapshots.<snapshot>``) as tables of the warehouse's
catalog (target ``iceberg``, ``dbt_project.yml``). Spark commits them as dbt runs its
statements; once the whole build has succeeded, one append to the ledger ``meta.commits``
records, as step ``dbt``, the snapshot each table is at: ``marts/<model>`` and
``snapshots/<snapshot>``. Readers read a run's marts at those snapshots (a time-travel read, as
for the raw and core tables), so a build that failed half-way - some marts committed, a test
failed - publishes nothing.
"""

from __future__ import annotations

from pipelines.warehouse.iceberg.catalog import SPARK_CATALOG
from pipelines.warehouse.iceberg.warehouse import IcebergWarehouse

STEP = "dbt"
LAYERS = ("marts", "snapshots")  # the namespaces of the catalog dbt writes to


def built_tables(run_result) -> list[str]:
    """``<layer>/<name>`` of every model and snapshot of the invocation that dbt wrote to the
    Iceberg catalog (schema ``kaudit.<layer>``), in the order dbt finished them."""
    out = []
    for r in getattr(run_result, "results", None) or []:
        node = getattr(r, "node", None)
        status = str(getattr(r.status, "value", r.status)).lower()
        if node is None or node.resource_type not in ("model", "snapshot") or status != "success":
            continue
        catalog, _, layer = (node.schema or "").partition(".")
        if catalog == SPARK_CATALOG and layer in LAYERS:
            out.append(f"{layer}/{node.alias or node.name}")
    return out


def record(warehouse: IcebergWarehouse, run_id: str, tables: list[str]) -> list[tuple[str, int | None, int]]:
    """Appends the ledger rows of ``tables`` (each at its current snapshot) for ``run_id``:
    ``[(table, snapshot id, rows)]``; rows: the run's rows of a mart, every version of a
    snapshot (the history is not per run)."""
    committed = []
    for table in tables:
        layer, name = table.split("/", 1)
        ice = warehouse.catalog.load_table((layer, name))
        snap = ice.current_snapshot()
        sid = None if snap is None else snap.snapshot_id
        committed.append((table, sid, _rows(ice, snap, run_id if layer == "marts" else None)))
    if committed:
        warehouse.record(run_id, STEP, committed)
    return committed


def _rows(ice, snap, run_id: str | None) -> int:
    """Rows at snapshot ``snap`` (of the run's partition, when ``run_id``), from the manifests."""
    from pyiceberg.expressions import AlwaysTrue, EqualTo

    if snap is None:
        return 0
    scan = ice.scan(row_filter=EqualTo("run_id", run_id) if run_id else AlwaysTrue(), snapshot_id=snap.snapshot_id)
    tasks = list(scan.plan_files())
    if any(task.delete_files for task in tasks):  # rows deleted by position: count what is left
        return scan.to_arrow().num_rows
    return sum(task.file.record_count for task in tasks)
