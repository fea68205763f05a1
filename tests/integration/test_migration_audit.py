"""The ZooKeeper-to-KRaft migration audit against a real migration: a ZooKeeper-mode Kafka 3.9.2
cluster migrated to KRaft with the documented procedure (``testkit.cluster.migration``), its
ZooKeeper data dir, the migrated controller's metadata log and the broker's
``__consumer_offsets`` read by kaudit, the migration's core tables compared with what the
scenario did and the cluster's answers before and after (``testkit.cluster.migration_oracle``):
the state transitions, the cluster id, topic ids, replicas and configs carried over, a topic
created after, the broker's endpoint, and the groups' offsets with the two planted faults (a
group moved backwards, a group's offsets deleted) as the only findings.

In the suite: the kept fixture (``pipelines/demo/real/migration-3.9.2``) as the demo's run of it
(the session's ``demo_run``: its extracts and build), the three core tables. Under ``make
matrix``: a live migration through ``kaudit build`` and ``kaudit validate`` (the ``migration`` GX
suite fails on the planted offset faults only).
"""

from __future__ import annotations

import json
import time

import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.migration import FIXTURE, run_migration_scenario
from testkit.cluster.migration_oracle import compare, extract, kept_oracle

pytestmark = pytest.mark.integration
TABLES = ("core/migration_states", "core/migration_audit", "core/migration_offsets")


def _check(oracle: dict, tables: dict[str, list[dict]], label: str, started: float) -> None:
    result = compare(oracle, *(tables[t] for t in TABLES))
    print(f"| {label} | {result.row()} | kaudit {time.monotonic() - started:.0f} s |")
    assert result.compared > 30
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.expected == 4  # orders-0 of g-moved moved backwards, orders-0..2 of g-lost lost
    assert result.found == result.expected
    assert not result.false, "\n".join(result.false)


def test_kept_migration_audited(demo_run):
    started = time.monotonic()
    run_id = demo_run.estate_run("migration")
    tables = {t: read_arrow(Warehouse(demo_run.warehouse), t, run_id, with_run_id=False).to_pylist() for t in TABLES}
    _check(kept_oracle(FIXTURE), tables, "3.9.2 migration (kept, the demo's run)", started)


@pytest.mark.matrix
def test_real_migration_audited(spark, tmp_path):
    from testkit.cluster.kraft_oracle import kaudit

    outcome = run_migration_scenario(tmp_path / "cluster")
    started = time.monotonic()
    wh = tmp_path / "wh"
    extract(outcome.zk_data_dir, outcome.metadata_dir, outcome.log_dir, wh, "real")
    code, out = kaudit("--warehouse", str(wh), "--run-id", "real", "--spark-master", "local[2]", "build", "--skip-dbt")
    assert code == 0, out[-3000:]
    tables = {t: read_arrow(Warehouse(wh), t, "real", with_run_id=False).to_pylist() for t in TABLES}
    _check({"before": outcome.before, "after": outcome.after}, tables, "3.9.2 migration (live)", started)
    # GX: the planted offset faults fail their expectation with their 4 rows; the rest passes
    code, out = kaudit("--warehouse", str(wh), "--run-id", "real", "--spark-master", "local[2]", "validate")
    results = json.loads((wh / "validation" / "run_id=real" / "results.json").read_text())
    suite = {r["expectation"]: r for r in results if r["suite"] == "migration"}
    assert (suite["migration_kept_committed_offsets"]["success"],
            suite["migration_kept_committed_offsets"]["unexpected_count"]) == (False, 4), out[-3000:]
    for name in ("migration_carried_everything_over", "migration_audit_statuses_named",
                 "migration_offsets_statuses_named"):
        assert suite[name]["success"] is True, (name, suite[name])
