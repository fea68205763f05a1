"""The branch a dbt build writes the marts and the history on, and what it publishes.

dbt builds the marts (``kaudit.marts.<model>``, partitioned by ``run_id``) and the history
(``kaudit.snapshots.<snapshot>``) as tables of the warehouse's catalog, as step ``dbt`` of the
run, with the other steps' write-audit-publish (:mod:`pipelines.warehouse.iceberg.publish`):
the tables have ``write.wap.enabled`` (dbt_project.yml) and dbt's session reads and writes them
on the build's branch ``kaudit_<run>_dbt`` (Spark's ``spark.wap.branch``: profiles.yml), which
Iceberg creates from ``main`` at the build's first write of each table; a table the build
creates has no snapshot on ``main`` until published. Once the whole build has succeeded, the
step's publication records each table's branch head in the ledger ``meta.commits``
(``marts/<model>``, ``snapshots/<snapshot>``) and fast-forwards ``main`` to it. A build that
failed or was killed half-way publishes nothing: ``main`` of every table is as it was, and its
branches are removed (on failure, by the next build of the run, or by any step's recovery).
"""

from __future__ import annotations

from pipelines.warehouse.iceberg import publish
from pipelines.warehouse.iceberg.catalog import SPARK_CATALOG
from pipelines.warehouse.warehouse import Warehouse

STEP = "dbt"
LAYERS = ("marts", "snapshots")  # the namespaces of the catalog dbt writes to
WORKING = "intermediate"  # the namespace of the build's working tables (not published)


def dbt_tables(warehouse: Warehouse) -> list[str]:
    """``<layer>/<name>`` of every table of the catalog's namespaces dbt writes to."""
    out = []
    catalog = warehouse.catalog
    for layer in LAYERS:
        if (*warehouse.namespace, layer) in [tuple(n) for n in catalog.list_namespaces(warehouse.namespace)]:
            out += [f"{layer}/{ident[-1]}" for ident in catalog.list_tables((*warehouse.namespace, layer))]
    return sorted(out)


def drop_working_tables(warehouse: Warehouse) -> None:
    """Drops the previous build's working tables (``kaudit.intermediate.<model>``) and deletes
    their files, with pyiceberg: Spark's ``drop table ... purge`` deletes them with a Spark job
    per table (the demo's build: 2.2 s a table at load 10, 13 tables)."""
    catalog, namespace = warehouse.catalog, (*warehouse.namespace, WORKING)
    if namespace in [tuple(n) for n in catalog.list_namespaces(warehouse.namespace)]:
        for ident in catalog.list_tables(namespace):
            catalog.purge_table(ident)


def note_tables(warehouse: Warehouse, run_id: str) -> str:
    """The build's branch, every table dbt may have written noted in the step's mark (so that an
    abandoned build's branches are found: :func:`~pipelines.warehouse.iceberg.publish.abandon`)."""
    for table in dbt_tables(warehouse):
        publish.note(warehouse, table, run_id, STEP)
    return publish.branch(run_id, STEP)


def open_build(warehouse: Warehouse, run_id: str) -> str:
    """The build's branch, with no table on it yet: a branch an earlier attempt left (a table it
    created, which no mark named) is removed, so the build starts from ``main`` of every table."""
    name = note_tables(warehouse, run_id)
    for table in dbt_tables(warehouse):
        publish.drop_branch(warehouse, table, name)
    return name


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


def branch_heads(warehouse: Warehouse, run_id: str, tables: list[str]) -> dict[str, tuple[int | None, int]]:
    """``{table: (snapshot id, rows)}``: the head of the build's branch of each of ``tables``
    (``main``'s snapshot where the build committed nothing to it); rows: the run's rows of a
    mart, every version of a snapshot (the history is not per run)."""
    name = publish.branch(run_id, STEP)
    out = {}
    for table in tables:
        ice = warehouse.catalog.load_table(warehouse.ident(table))
        ref = ice.metadata.refs.get(name)
        snap = ice.snapshot_by_id(ref.snapshot_id) if ref is not None else ice.current_snapshot()
        sid = None if snap is None else snap.snapshot_id
        out[table] = (sid, _rows(ice, snap, run_id if table.startswith("marts/") else None))
    return out


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
