"""kill -9 of a dbt build (a real process with its own real local Spark) in the middle of its
writes: ``main`` of every mart and snapshot table is as the previous build left it (what an
engine reading the catalog's current state sees: pyiceberg's plain ``scan()``, Spark SQL
without ``VERSION AS OF``), the ledger names nothing of the killed build, and building the run
again gives the marts and the history a build that was never killed gives. The oracle is that
clean sequence of builds, in a warehouse of its own, over the same inputs (test_dbt_build.py's
script-made tables).

The kill lands while the build is writing: the test watches the catalog (the SQLite file, read
with sqlite3) and kills the build the moment a mart or snapshot table's metadata changed, i.e.
dbt committed to the build's branch (pipelines/transform/iceberg_ledger.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_dbt_build import at, first_run_inputs, write  # (tests/integration)
from test_iceberg_kill import kill_when

from pipelines.warehouse.iceberg import publish
from pipelines.warehouse.iceberg.catalog import bind_catalog
from pipelines.warehouse.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

REPO = Path(__file__).resolve().parents[2]
SELECT = ["+consumer_lag", "+offset_regressions", "+commit_frequency", "+snap_partition_ownership",
          "+snap_committed_offsets"]
TABLES = ("marts/consumer_lag", "marts/offset_regressions", "marts/commit_frequency",
          "snapshots/snap_partition_ownership", "snapshots/snap_committed_offsets")
# dbt's wall-clock columns of the history (when a build ran), left out of the comparison
CLOCK = {"dbt_valid_from", "dbt_valid_to", "dbt_updated_at", "dbt_scd_id"}

DRIVER = """
import sys
from pipelines.context import RunContext
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.warehouse import Warehouse

root, run_id, *select = sys.argv[1:]
run_dbt(RunContext(Warehouse(root), run_id, spark_master="local[1]", quiet=True), select=select)
"""


def _inputs(wh: Warehouse) -> None:
    """Run r0 (test_dbt_build's first run) and run r2: zg's partition changed owner, g's
    ZooKeeper offset moved."""
    first_run_inputs(wh, "r0")
    write(wh, "core/partition_owners", "r2", [{"group_id": "zg", "topic": "t", "partition": 0, "broker_id": None,
                                               "owner": "zg_host-2-bbbb-0"}])
    write(wh, "core/zk_offsets", "r2", [{"group_id": "g", "topic": "t", "partition": 0, "broker_id": None,
                                         "committed_offset": 30, "mtime": at(90)}])


def _command(root: Path, run_id: str) -> list[str]:
    return [sys.executable, "-c", DRIVER, str(root), run_id, *SELECT]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _build(root: Path, run_id: str) -> float:
    start = time.monotonic()
    done = subprocess.run(_command(root, run_id), capture_output=True, text=True, timeout=900, env=_env(),
                          cwd=root.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return time.monotonic() - start


def _metadata(db: Path) -> dict[tuple[str, str], str] | None:
    """(namespace, table) -> the metadata file the catalog names now of the marts and
    snapshots, read with sqlite3; None when the catalog could not be read now (a writer holds
    its lock)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as con:
            rows = con.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables").fetchall()
    except sqlite3.Error:
        return None
    return {(ns, name): loc for ns, name, loc in rows if ns in ("marts", "snapshots")}


def _kill_at_first_write(root: Path, run_id: str, db: Path) -> float | None:
    """Starts the build; kills it once a mart or snapshot table's metadata changed. Seconds
    into the build when killed, or None if the build finished first."""
    before = _metadata(db)
    assert before, "the first build's tables are not in the catalog"

    def written() -> bool:
        now = _metadata(db)
        return now is not None and now != before

    start = time.monotonic()
    if kill_when(_command(root, run_id), written, env=_env(), cwd=root.parent):
        return time.monotonic() - start
    return None


def _main(wh: Warehouse) -> dict[str, tuple[int | None, list[str]]]:
    """Each table's ``main``: its snapshot and its rows (pyiceberg's plain ``scan()``), without
    dbt's wall-clock columns."""
    out = {}
    for table in TABLES:
        ice = wh.catalog.load_table(wh.ident(table))
        snap = ice.current_snapshot()
        rows = ice.scan().to_arrow().to_pylist()
        out[table] = (None if snap is None else snap.snapshot_id,
                      sorted(repr({k: v for k, v in r.items() if k not in CLOCK}) for r in rows))
    return out


def _rows(state: dict[str, tuple[int | None, list[str]]]) -> dict[str, list[str]]:
    return {table: rows for table, (_, rows) in state.items()}


def _branches(wh: Warehouse) -> list[str]:
    return sorted(f"{t}:{name}" for t in TABLES for name in wh.catalog.load_table(wh.ident(t)).metadata.refs
                  if name.startswith(publish.PREFIX))


def test_killed_dbt_build_leaves_main_as_it_was_and_a_rerun_gives_the_same_marts(spark, tmp_path):
    clean = Warehouse(tmp_path / "clean" / "wh")
    _inputs(clean)
    _build(clean.root, "r0")
    wall = _build(clean.root, "r2")
    want = _rows(_main(clean))
    assert want["marts/consumer_lag"] and want["snapshots/snap_partition_ownership"]

    wh = Warehouse(tmp_path / "killed" / "wh")
    _inputs(wh)
    _build(wh.root, "r0")
    before = _main(wh)
    killed_at = _kill_at_first_write(wh.root, "r2", wh.catalog_config.sqlite_path)
    assert killed_at is not None, "the build finished before the test saw it write"
    wh = Warehouse(wh.root)
    # the build wrote on its branch, and nothing else: main of every table is r0's build's,
    # for pyiceberg and for Spark SQL reading the current state; no ledger row of r2's build
    assert _branches(wh), "killed before any write to the build's branch"
    assert _main(wh) == before
    assert not [t for (step, t) in wh.snapshots("r2") if step == "dbt"]
    bind_catalog(spark, wh.catalog_config)  # (the test session's catalog `kaudit` is this warehouse's)
    spark_rows = spark.sql("select run_id, count(*) as n from kaudit.marts.consumer_lag group by run_id").collect()
    assert {r.run_id: r.n for r in spark_rows} == {"r0": 3}

    _build(wh.root, "r2")
    wh = Warehouse(wh.root)
    assert _rows(_main(wh)) == want
    assert _branches(wh) == []
    assert {t for (step, t) in wh.snapshots("r2") if step == "dbt"} == set(TABLES)
    print(f"\nclean r2 build {wall:.1f} s; killed {killed_at:.1f} s into the build, at its first write")
