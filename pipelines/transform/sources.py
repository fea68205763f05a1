"""The warehouse tables the dbt project reads, as a run's ``KAUDIT_SOURCES`` (``dbt_runner.run_env``).

Each dbt source (``_<source>__sources.yml``) is a view ``<schema>.<table>`` of the run's rows of
the catalog's table (``kaudit.<layer>.<name>``) as of the snapshot the run's ledger recorded for
it, created by the on-run-start macro ``kaudit_register_sources``. Its columns come from
``pipelines.warehouse.tables`` (the one declaration of those schemas) as the Spark types of
``pipelines.spark.schemas``, in Spark SQL; a table the run has no rows of becomes an empty view
with the same columns.
"""

from __future__ import annotations

from pipelines.spark.schemas import table_schema

# dbt relation (schema.table) -> warehouse table.
SOURCES: dict[str, str] = {
    "kaudit_raw.offset_commits": "raw/offset_commits",
    "kaudit_raw.log_end_offsets": "raw/log_end_offsets",
    "kaudit_raw.batch_timestamps": "raw/batch_timestamps",
    "kaudit_raw.log_start_checkpoints": "raw/log_start_checkpoints",
    "kaudit_raw.remote_log_metadata": "raw/remote_log_metadata",
    "kaudit_raw.topic_configs": "raw/topic_configs",
    "kaudit_raw.znodes": "raw/znodes",
    "kaudit_raw.kraft_configs": "raw/kraft_configs",
    "kaudit_raw.metadata_records": "raw/metadata_records",
    "kaudit_raw.znode_changes": "raw/znode_changes",
    "kaudit_raw.group_metadata": "raw/group_metadata",
    "kaudit_raw.group_members": "raw/group_members",
    "kaudit_raw.group_assignments": "raw/group_assignments",
    "kaudit_core.zk_offsets": "core/zk_offsets",
    "kaudit_core.partition_owners": "core/partition_owners",
    "kaudit_core.assignment_audit": "core/assignment_audit",
    "kaudit_core.rebalance_states": "core/rebalance_states",
    "kaudit_core.settled_audit": "core/settled_audit",
    "kaudit_core.mm2_failover": "core/mm2_failover",
    "kaudit_core.mm2_findings": "core/mm2_findings",
    "kaudit_core.migration_audit": "core/migration_audit",
    "kaudit_core.migration_offsets": "core/migration_offsets",
    "kaudit_core.share_partition_state": "core/share_partition_state",
    "kaudit_core.share_group_assignments": "core/share_group_assignments",
    "kaudit_core.share_group_findings": "core/share_group_findings",
    "kaudit_core.streams_group_topology": "core/streams_group_topology",
    "kaudit_core.streams_group_tasks": "core/streams_group_tasks",
    "kaudit_core.share_group_epochs": "core/share_group_epochs",
    "kaudit_core.streams_group_epochs": "core/streams_group_epochs",
}


def run_sources(warehouse, run_id: str) -> dict[str, dict]:
    """``{"<schema>.<table>": {"iceberg", "snapshot", "exists", "columns": [[name, type], ...]}}``
    for the run of ``warehouse`` (:class:`~pipelines.warehouse.warehouse.Warehouse`)."""
    out: dict[str, dict] = {}
    for relation, table in SOURCES.items():
        snapshot = warehouse.snapshot_id(table, run_id)
        out[relation] = {
            "iceberg": warehouse.spark_identifier(table),
            "snapshot": snapshot,
            "exists": snapshot is not None,
            "columns": _columns(table),
        }
    return out


def _columns(table: str) -> list[list[str]]:
    return [[f.name, f.dataType.simpleString()] for f in table_schema(table).fields]
