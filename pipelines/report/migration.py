"""What the report says about a ZooKeeper-to-KRaft migration (KIP-866): the migration's state
transitions in the metadata log, what the KRaft metadata holds against what ZooKeeper held
(cluster id, topic ids, replicas, ISR, configs, brokers; counted per kind and status, the
differences listed) and each group's committed offsets before and after, with the groups whose
offsets were lost or moved backwards. Read with pyarrow from ``core/migration_states``,
``core/migration_audit`` and ``core/migration_offsets`` (docs/migration-audit.md)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pipelines.reading import read_arrow
from pipelines.report.order import nulls_last
from pipelines.warehouse import Warehouse

MAX_ROWS = 200  # differences and offsets shown; findings.csv has every finding
# findings.csv statuses: migration_<kind>_<status> per difference, and per group and partition
OFFSETS_LOST, OFFSETS_MOVED_BACKWARDS = "migration_offsets_lost", "migration_offsets_moved_backwards"


@dataclass
class MigrationFacts:
    states: list[dict]  # source, offset, at, state_id, state (in log order)
    compared: list[dict]  # kind, status, n: every comparison counted
    differences: list[dict]  # core/migration_audit rows that are findings, then other differences
    offsets: list[dict]  # core/migration_offsets rows: findings first
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
    return MigrationFacts(states=states, compared=compared, differences=differences, offsets=offsets)


def offsets_status(status: str | None) -> str:
    """The findings.csv status of a migration_offsets finding."""
    return OFFSETS_MOVED_BACKWARDS if status == "moved_backwards" else OFFSETS_LOST


def finding_rows(facts: MigrationFacts | None) -> list[dict]:
    """findings.csv rows (``source`` migration): ``group_id, topic, partition, status,
    committed_offset, detail``; a difference of the metadata is ``migration_<kind>_<status>``
    with what each side held, an offset ``migration_offsets_lost|moved_backwards`` with the
    offset after the migration and the one before."""
    if facts is None:
        return []
    out = []
    for r in facts.differences:
        if r["is_finding"]:
            what = f"{r['kind']} {r['name']}" if r["name"] else r["kind"]
            out.append({"group_id": None, "topic": r["topic"], "partition": r["partition"],
                        "status": f"migration_{r['kind']}_{r['status']}", "committed_offset": None,
                        "detail": f"{what}: ZooKeeper {r['zookeeper']!s}, KRaft {r['kraft']!s}"})
    for r in facts.offsets:
        if r["is_finding"]:
            out.append({"group_id": r["group_id"], "topic": r["topic"], "partition": r["partition"],
                        "status": offsets_status(r["status"]), "committed_offset": r["after_offset"],
                        "detail": f"before the migration {r['before_offset']}, after "
                                  + ("none" if r["after_offset"] is None else str(r["after_offset"]))})
    return out
