"""The snapshots' history across processes: two `dbt build`s of the snapshots, each in its own
Python process with its own Spark, the second reading only what the first committed to the
warehouse's Iceberg catalog. The history expected is computed here from the owners the test
wrote, run by run (dbt's SCD2 rule: a version per key and owner, closed by the run that sees
another owner or none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.warehouse.tables import SCHEMAS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

# One build in a fresh process, then the snapshot's rows as Spark SQL gives them from the catalog.
DRIVER = """
import json, sys
from pipelines.context import RunContext
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.warehouse import Warehouse

root, run_id, out = sys.argv[1:]
ctx = RunContext(Warehouse(root), run_id, spark_master="local[1]", quiet=True)
run_dbt(ctx, select=["+snap_partition_ownership"])
rows = ctx.spark().sql("select * from kaudit.snapshots.snap_partition_ownership").collect()
with open(out, "w") as f:
    json.dump({"rows": [r.asDict() for r in rows]}, f, default=str)
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


def test_history_across_two_processes(warehouse, tmp_path):
    for run_id, owners in OWNERS.items():
        rows = [
            {"group_id": "zg", "topic": "t", "partition": p, "broker_id": None, "owner": owner}
            for p, owner in owners.items()
        ]
        table = pa.Table.from_pylist(rows, SCHEMAS["core/partition_owners"])
        warehouse.write_table("core/partition_owners", run_id, table)
    first = build_in_new_process(warehouse, "r1", tmp_path / "p1")
    second = build_in_new_process(warehouse, "r2", tmp_path / "p2")

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

    # Spark SQL in the second process and pyiceberg here (main: no Spark) give the same history
    assert versions(second["rows"]) == expected
    ice = warehouse.catalog.load_table(("snapshots", "snap_partition_ownership"))
    current = ice.scan().to_arrow().to_pylist()
    assert versions(current) == expected
    assert len({r["dbt_scd_id"] for r in current}) == len(expected)
    by_version = {(r["partition"], r["dbt_valid_from_run_id"]): r for r in current}
    # t-1's new owner starts when its old one ends; the still current versions are open
    assert by_version[1, "r1"]["dbt_valid_to"] == by_version[1, "r2"]["dbt_valid_from"]
    assert all(r["dbt_valid_to"] is None for r in current if r["dbt_valid_to_run_id"] is None)

    # "the history as of run r1": a time-travel read at the snapshot r1's ledger recorded
    as_of_r1 = ice.scan(snapshot_id=warehouse.snapshots("r1")[("dbt", "snapshots/snap_partition_ownership")])
    r1_versions = [(p, owner, "r1", None) for p, owner in OWNERS["r1"].items()]
    assert versions(as_of_r1.to_arrow().to_pylist()) == versions(first["rows"]) == sorted(r1_versions)
