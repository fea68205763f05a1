"""Benchmark: a step's cost as the warehouse ages (``--runs`` runs, each one step of three
raw tables of a few rows and its ledger row, then a read of one of them, as an extract and the
next step's reader do).

Two warehouses side by side in the same process, alternating: ``expired``, whose tables expire
every snapshot that is not ``main``'s at each publication (``history.expire.max-snapshot-age-ms``
0: what kaudit's 5-day default does to a warehouse older than 5 days), and the baseline ``kept``,
whose tables keep every snapshot (a retention longer than the benchmark). Printed: each side's
median seconds per step over the first and the last tenth of the runs, their growth, and the
ratio kept/expired at the end. Each run's rows are read back and checked on both sides.

    .venv/bin/python benchmarks/bench_warehouse_age.py [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from clocks import load

from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import LEDGER, Warehouse

TABLES = ("raw/group_members", "raw/offset_commits", "raw/group_metadata")
RETENTION = {"expired": "0", "kept": str(10 * 365 * 24 * 3600 * 1000)}


def rows(table: str, tag: str, n: int = 5) -> pa.Table:
    schema = SCHEMAS[table]
    return pa.Table.from_pylist([{k: None for k in schema.names} | {"group_id": f"{tag}-{i}"} for i in range(n)],
                                schema=schema)


def step(root: Path, run_id: str) -> float:
    """One step of run ``run_id`` and a read of its rows, as a new process sees the warehouse."""
    start = time.perf_counter()
    wh = Warehouse(root)
    with wh.transaction(run_id, "extract_offsets") as tx:
        for table in TABLES:
            tx.write(table, rows(table, run_id))
    got = sorted(wh.read_arrow("raw/offset_commits", run_id).column("group_id").to_pylist())
    assert got == sorted(rows("raw/offset_commits", run_id).column("group_id").to_pylist()), run_id
    return time.perf_counter() - start


def retain(root: Path, retention: str) -> None:
    wh = Warehouse(root)
    for table in (*TABLES, LEDGER):
        with wh.catalog.load_table(wh.ident(table)).transaction() as txn:
            txn.set_properties({"history.expire.max-snapshot-age-ms": retention})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    tenth = max(args.runs // 10, 1)
    with tempfile.TemporaryDirectory(prefix="bench-age-") as tmp:
        roots = {side: Path(tmp) / side for side in RETENTION}
        times: dict[str, list[float]] = {side: [] for side in RETENTION}
        for r in range(args.runs):
            for side, root in roots.items():
                times[side].append(step(root, f"r{r:05d}"))
                if r == 0:
                    retain(root, RETENTION[side])
        for side, root in roots.items():  # the first run's rows, its snapshot long expired on one side
            wh = Warehouse(root)
            assert wh.read_arrow("raw/offset_commits", "r00000").num_rows == 5, side
            snaps = len(wh.catalog.load_table(wh.ident("raw/offset_commits")).metadata.snapshots)
            first, last = statistics.median(times[side][1:tenth + 1]), statistics.median(times[side][-tenth:])
            print(f"{side:8} first tenth {first:6.3f} s/step  last tenth {last:6.3f} s/step  "
                  f"growth {last / first:5.2f}x  ({snaps} snapshots of raw/offset_commits at the end)")
        end = {side: statistics.median(times[side][-tenth:]) for side in RETENTION}
        print(f"kept / expired after {args.runs} runs: {end['kept'] / end['expired']:.2f}x  ({load()})")


if __name__ == "__main__":
    main()
