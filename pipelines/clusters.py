"""Runs that hold several clusters: each cluster of a run has an alias, and its extracted tables
live in a warehouse of their own under the main one, ``<warehouse>/clusters/<alias>/``, with the
same layout and the same run ids (``<layer>/<table>/run_id=<id>/``); on an Iceberg warehouse, in
the same catalog under the namespace ``clusters.<alias>`` (``kaudit.clusters.<alias>.raw.znodes``),
its run records and locks in ``<warehouse>/clusters/<alias>/``. The default alias is the
main warehouse itself, so a single-cluster run is laid out as it always was, and the existing
steps read only the default cluster. Cross-cluster audits (MirrorMaker 2) read the run's
partitions of every alias and write their core tables into the main warehouse, each row naming
its clusters' aliases (docs/clusters.md)."""

from __future__ import annotations

from pipelines.errors import UsageError
from pipelines.warehouse.runs import RUN_ID
from pipelines.warehouse.warehouse import Warehouse

DEFAULT_ALIAS = "default"
CLUSTERS_DIR = "clusters"
ALIAS_RULE = "letters, digits, '-' and '_' only (at most 64)"


def check_alias(alias: str) -> str:
    """``alias`` if it is a valid cluster alias (the rule of run ids); else a UsageError."""
    if not isinstance(alias, str) or not RUN_ID.match(alias):
        raise UsageError(f"cluster alias {alias!r}: {ALIAS_RULE}")
    return alias


def cluster_warehouse(warehouse: Warehouse, alias: str | None) -> Warehouse:
    """The warehouse of cluster ``alias`` (None or the default alias: ``warehouse`` itself)."""
    if alias is None or alias == DEFAULT_ALIAS:
        return warehouse
    local = warehouse.root / CLUSTERS_DIR / check_alias(alias)
    config = warehouse.catalog_config  # the same catalog and location, the tables under clusters.<alias>
    return Warehouse(local, location=config.location, catalog=config.uri, namespace=(CLUSTERS_DIR, alias))


def aliases(warehouse: Warehouse, run_id: str, table: str) -> list[str]:
    """The aliases of the clusters whose partition of ``table`` holds run ``run_id``: the
    default one first, then the named ones in order."""
    out = [DEFAULT_ALIAS] if warehouse.exists(table, run_id) else []
    root = warehouse.root / CLUSTERS_DIR
    if root.is_dir():
        out += [d.name for d in sorted(root.iterdir())
                if d.is_dir() and RUN_ID.match(d.name) and cluster_warehouse(warehouse, d.name).exists(table, run_id)]
    return out
