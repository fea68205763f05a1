"""The Parquet snapshots' history across processes: two `dbt build`s of the snapshots, each in
its own Python process with its own Spark (an empty in-memory catalog), the second reading
only what the first left on disk. The history expected is computed here from the owners the
test wrote, run by run (dbt's SCD2 rule: a version per key and owner, closed by the run that
sees another owner or none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from pipelines.warehouse.tables import SCHEMAS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

# One build in a fresh process: is the history in this process's catalog before dbt runs
# (never: the catalog is in memory), then the snapshot's rows as the view kaudit_snapshots.<name>
# gives them after the build, and as models/README.md's query of the directory gives them.
DRIVER = """
import json, sys
from pipelines.context import RunContext
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.directory import Warehouse

root, run_id, out = sys.argv[1:]
ctx = RunContext(Warehouse(root), run_id, spark_master="local[1]", quiet=True)
spark = ctx.spark()
known_before = spark.catalog.tableExists("kaudit_snapshots.snap_partition_ownership__log")
run_dbt(ctx, select=["+snap_partition_ownership"])
rows = spark.sql("select * from kaudit_snapshots.snap_partition_ownership").collect()
# models/README.md's query of the directory, as a new session without the view would run it
direct = spark.sql(f'''
    select * from (
        select *, row_number() over (partition by dbt_scd_id order by dbt_valid_to is null, run_id desc) as copy
        from parquet.`{root}/snapshots/snap_partition_ownership`
    ) where copy = 1
''').collect()
with open(out, "w") as f:
    found = {"known_before": known_before, "rows": [r.asDict() for r in rows], "direct": [r.asDict() for r in direct]}
    json.dump(found, f, default=str)
"""

# zg's owners, run by run: t-0 keeps its owner, t-1 changes owner, t-2 loses its owner, t-3 is new
OWNERS = {
    "r1": {0: "zg_host-1-aaaa-0", 1: "zg_host-1-aaaa-1", 2: "zg_host-2-bbbb-0"},
    "r2": {0: "zg_host-1-aaaa-0", 1: "zg_host-3-cccc-0", 3: "zg_host-3-cccc-1"},
}


def expected_history(owners_by_run: dict[str, dict[int, str]]) -> list[tuple]:
    """(partition, owner, valid_from_run, valid_to_run) of every version, in run order."""
    versions, current = [], {}
    for run_id, owners in owners_by_run.items():
        for partition, version in list(current.items()):
            if owners.get(partition) != version[1]:
                version[3] = run_id
                del current[partition]
        for partition, owner in owners.items():
            if partition not in current:
                current[partition] = [partition, owner, run_id, None]
                versions.append(current[partition])
    return sorted(tuple(v) for v in versions)


def build_in_new_process(warehouse, run_id: str, workdir: Path) -> dict:
    workdir.mkdir()
    out = workdir / "history.json"
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(warehouse.root), run_id, str(out)],
        cwd=workdir,  # nothing the first process left in a working directory is seen
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout's pipelines and dbt project
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def history_from_files(root: Path) -> list[dict]:
    """The history as a reader of `<warehouse>/snapshots/<name>/` gets it (models/README.md):
    per version (dbt_scd_id), its closed copy if it has one, else its open copy."""
    rows = ds.dataset(root, format="parquet", partitioning="hive").to_table().to_pylist()
    chosen: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: r["dbt_valid_to"] is not None):
        chosen[row["dbt_scd_id"]] = row
    return list(chosen.values())


def files_of(path: Path) -> dict[str, tuple[int, int]]:
    return {str(f.relative_to(path)): (f.stat().st_size, f.stat().st_mtime_ns) for f in path.rglob("*.parquet")}


def test_history_across_two_processes(warehouse, tmp_path):
    for run_id, owners in OWNERS.items():
        rows = [
            {"group_id": "zg", "topic": "t", "partition": p, "broker_id": None, "owner": owner}
            for p, owner in owners.items()
        ]
        table = pa.Table.from_pylist(rows, SCHEMAS["core/partition_owners"])
        warehouse.write_table("core/partition_owners", run_id, table)
    log = warehouse.root / "snapshots" / "snap_partition_ownership"

    first = build_in_new_process(warehouse, "r1", tmp_path / "p1")
    r1_files = files_of(log / "run_id=r1")
    second = build_in_new_process(warehouse, "r2", tmp_path / "p2")

    assert (first["known_before"], second["known_before"]) == (False, False)
    expected = expected_history(OWNERS)
    assert expected == [
        (0, "zg_host-1-aaaa-0", "r1", None),
        (1, "zg_host-1-aaaa-1", "r1", "r2"),
        (1, "zg_host-3-cccc-0", "r2", None),
        (2, "zg_host-2-bbbb-0", "r1", "r2"),
        (3, "zg_host-3-cccc-1", "r2", None),
    ]

    def versions(rows):
        return sorted((r["partition"], r["owner"], r["dbt_valid_from_run_id"], r["dbt_valid_to_run_id"]) for r in rows)

    # the view the second process made, the README's query and the files read directly by
    # pyarrow give the same history
    assert versions(second["rows"]) == expected
    assert versions(second["direct"]) == expected
    from_files = history_from_files(log)
    assert versions(from_files) == expected
    assert len({r["dbt_scd_id"] for r in from_files}) == len(expected)
    by_version = {(r["partition"], r["dbt_valid_from_run_id"]): r for r in from_files}
    # t-1's new owner starts when its old one ends; the still current versions are open
    assert by_version[1, "r1"]["dbt_valid_to"] == by_version[1, "r2"]["dbt_valid_from"]
    assert all(r["dbt_valid_to"] is None for r in from_files if r["dbt_valid_to_run_id"] is None)

    # append only: r1's files untouched; r2 wrote the versions it opened and closed copies of
    # those it closed, nothing else
    assert files_of(log / "run_id=r1") == r1_files
    written = ds.dataset(log / "run_id=r2", format="parquet").to_table().to_pylist()
    opened = [v for v in expected if v[2] == "r2"]
    closed = [v for v in expected if v[3] == "r2"]
    assert versions(written) == sorted(opened + closed)
