"""What the report says about a ZooKeeper-to-KRaft migration (KIP-866): the migration's state
transitions in the metadata log, what the KRaft metadata holds against what ZooKeeper held
(cluster id, topic ids, replicas, ISR, configs, brokers; counted per kind and status, the
differences listed) and each group's committed offsets before and after, with the groups whose
offsets were lost or moved backwards. Read with pyarrow from ``core/migration_states``,
``core/migration_audit`` and ``core/migration_offsets`` (docs/migration-audit.md); the findings
named as findings.csv has them from the mart ``marts/migration_findings``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pipelines.report.order import nulls_last
from pipelines.warehouse.reading import read_arrow, read_built
from pipelines.warehouse.warehouse import Warehouse

MAX_ROWS = 200  # differences and offsets shown; findings.csv has every finding


@dataclass
class MigrationFacts:
    states: list[dict]  # source, offset, at, state_id, state (in log order)
    compared: list[dict]  # kind, status, n: every comparison counted
    differences: list[dict]  # core/migration_audit rows that are findings, then other differences
    offsets: list[dict]  # core/migration_offsets rows: findings first
    named: list[dict]  # marts/migration_findings rows (none when dbt did not build it)
    max_rows: int = MAX_ROWS

    @property
    def findings(self) -> int:
        return sum(1 for r in (*self.differences, *self.offsets) if r["is_finding"])


def _rows(wh: Warehouse, table: str, run_id: str) -> list[dict]:
    return read_arrow(wh, table, run_id, with_run_id=False).to_pylist()


def gather_migration(wh: Warehouse, run_id: str) -> MigrationFacts | None:
    """The run's migration facts; None when it has no migration audit."""
    states = _rows(wh, "core/migration_states", run_id)
    audit = _rows(wh, "core/migration_audit", run_id)
    offsets = _rows(wh, "core/migration_offsets", run_id)
    if not (states or audit or offsets):
        return None
    counted = Counter((r["kind"], r["status"]) for r in audit)
    compared = [{"kind": k, "status": s, "n": n}
                for (k, s), n in sorted(counted.items(), key=lambda x: nulls_last(*x[0]))]
    differences = [r for r in audit if r["status"] != "match"]
    differences.sort(key=lambda r: nulls_last(not r["is_finding"], r["kind"], r["topic"], r["partition"], r["name"]))
    offsets.sort(key=lambda r: nulls_last(not r["is_finding"], r["group_id"], r["topic"], r["partition"]))
    states.sort(key=lambda r: nulls_last(r["offset"], r["source"]))
    mart = read_built(wh, "marts/migration_findings", run_id)
    named = [] if mart is None else mart.to_pylist()
    named.sort(key=lambda r: nulls_last(r["finding"], r["group_id"], r["topic"], r["partition"], r["config_name"]))
    return MigrationFacts(states=states, compared=compared, differences=differences, offsets=offsets, named=named)


def finding_rows(facts: MigrationFacts | None) -> list[dict]:
    """findings.csv rows (``source`` migration) from ``marts/migration_findings``: ``group_id,
    topic, partition, status, committed_offset, detail``; a difference of the metadata with what
    each side held, an offset lost or moved backwards with the offset after the migration and
    the one before."""
    if facts is None:
        return []
    out = []
    for r in facts.named:
        if r["kind"] == "committed_offset":
            after = "none" if r["after_offset"] is None else str(r["after_offset"])
            detail = f"before the migration {r['before_offset']}, after {after}"
        else:
            what = f"{r['kind']} {r['config_name']}" if r["config_name"] else r["kind"]
            detail = f"{what}: ZooKeeper {r['zookeeper']!s}, KRaft {r['kraft']!s}"
        out.append({"group_id": r["group_id"], "topic": r["topic"], "partition": r["partition"],
                    "status": r["finding"], "committed_offset": r["after_offset"], "detail": detail})
    return out
