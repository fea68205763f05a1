"""``kaudit migrate-warehouse OLD_DIR``: the runs of a Parquet warehouse of kaudit before 0.2,
committed into the (Iceberg) warehouse ``--warehouse`` names.

The retired layout: ``<old>/<layer>/<table>/run_id=<id>/*.parquet`` (hive partitions, the files
without a ``run_id`` column; a table several steps of a run write, ``raw/quarantine`` and
``raw/znodes``, has one file ``part-<step>.parquet`` per step), the run records in
``<old>/runs/run_id=<id>/`` and a run's documents in ``<old>/validation/run_id=<id>/`` and
``<old>/reports/run_id=<id>/``.

Each run of the old warehouse becomes the run of the same id: its run records and documents
are copied first (so the order of runs stays the old one), then its tables are committed in one
step ``migrate`` (a shared table's rows in a step of their old step's name each): one snapshot
per table and one set of ledger rows per run and step, as any step commits. A table is read a
batch at a time with its declared schema (a column an old file lacks, of ``ADDED_COLUMNS``,
reads as null) and written through the warehouse's writer, so memory stays bounded. A
directory kaudit no longer declares a table for is named and skipped, never guessed at. The old
directory is only read; running the migration again replaces the runs' partitions.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.dataset as ds

from pipelines.errors import InputError, UsageError
from pipelines.warehouse.iceberg.schemas import SHARED_TABLES
from pipelines.warehouse.runs import RUN_ID, RUNS
from pipelines.warehouse.warehouse import Warehouse

LAYERS = ("raw", "core", "marts", "quality")
DOCUMENTS = (RUNS, "validation", "reports")
STEP = "migrate"
SHARED_FILE = re.compile(r"^part-([A-Za-z0-9_-]{1,64})\.parquet$")
BATCH_ROWS = 1 << 20


def _parquet_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.parquet")
                  if not any(s.startswith(("_", ".")) for s in p.relative_to(directory).parts))


def found_runs(old: Path) -> dict[str, dict[str, dict[str, list[Path]]]]:
    """run -> step -> table -> its Parquet files, in the old layout under ``old``."""
    runs: dict[str, dict[str, dict[str, list[Path]]]] = {}
    for layer in LAYERS:
        base = old / layer
        for table_dir in sorted(base.iterdir()) if base.is_dir() else []:
            table = f"{layer}/{table_dir.name}"
            for part in sorted(table_dir.glob("run_id=*")):
                run_id = part.name.split("=", 1)[1]
                if not part.is_dir() or not RUN_ID.match(run_id):
                    continue
                for f in _parquet_files(part):
                    shared = SHARED_FILE.match(f.name) if table in SHARED_TABLES else None
                    step = shared.group(1) if shared else STEP
                    runs.setdefault(run_id, {}).setdefault(step, {}).setdefault(table, []).append(f)
    return runs


def migrate(old: Path, warehouse: Warehouse, say: Callable[[str], None]) -> dict[str, int]:
    """Commits every run of the Parquet warehouse ``old`` into ``warehouse`` (the module
    docstring); (table -> rows migrated)."""
    old = Path(old).absolute()
    if old == warehouse.root:
        raise UsageError(f"migrate-warehouse {old}: give the new warehouse another --warehouse directory")
    if not old.is_dir():
        raise InputError(f"{old}: not a directory (expected a Parquet warehouse of kaudit before 0.2)")
    runs = found_runs(old)
    if not runs:
        raise InputError(f"{old}: no <layer>/<table>/run_id=<id>/ Parquet partitions (expected a Parquet warehouse "
                         "of kaudit before 0.2)")
    rows: dict[str, int] = {}
    skipped: set[str] = set()
    for run_id in sorted(runs):
        for name in DOCUMENTS:
            src = old / name / f"run_id={run_id}"
            if src.is_dir():
                shutil.copytree(src, warehouse.partition_dir(name, run_id), dirs_exist_ok=True)
        for step, tables in sorted(runs[run_id].items()):
            with warehouse.transaction(run_id, step) as tx:
                for table, files in sorted(tables.items()):
                    try:
                        declared = warehouse.declared(table)
                    except KeyError:
                        skipped.add(table)
                        continue
                    writer = tx.writer(table)
                    dataset = ds.dataset([str(f) for f in files], format="parquet", schema=declared)
                    for batch in dataset.to_batches(batch_size=BATCH_ROWS):
                        writer.write(batch)
                    rows[table] = rows.get(table, 0) + writer.rows
        say(f"migrate-warehouse: run {run_id}: {sum(len(t) for t in runs[run_id].values())} table partition(s)")
    for table in sorted(skipped):
        say(f"migrate-warehouse: skipped {old / table}: not a table kaudit declares")
    say(f"migrate-warehouse: {len(runs)} run(s), {sum(rows.values())} rows in {len(rows)} tables from {old} "
        f"into {warehouse.catalog_config.location}")
    return rows
