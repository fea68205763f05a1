"""The Iceberg warehouse's commits through pyiceberg (no JVM): one snapshot per table per step,
the ledger that makes a step's tables visible together, re-runs replacing a run's partition.

The expected rows are the rows each test writes; the catalog is also read as the SQLite file
it is (``iceberg_tables``, the table Iceberg's JDBC catalog shares) and each table's metadata
as the JSON Iceberg writes, without pyiceberg."""

from __future__ import annotations

import json
import sqlite3
from urllib.parse import urlparse

import pyarrow as pa
import pytest

from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

MEMBERS = SCHEMAS["raw/group_members"]


def _members(n: int, tag: str) -> pa.Table:
    rows = [{name: None for name in MEMBERS.names} for _ in range(n)]
    for i, row in enumerate(rows):
        row["group_id"] = f"{tag}-{i}"
    return pa.Table.from_pylist(rows, schema=MEMBERS)


def _catalog_rows(wh: Warehouse) -> dict[tuple[str, str], str]:
    with sqlite3.connect(wh.catalog_config.sqlite_path) as db:
        rows = db.execute("SELECT catalog_name, table_namespace, table_name, metadata_location FROM iceberg_tables")
        return {(ns, name): loc for cat, ns, name, loc in rows if cat == "kaudit"}


def _snapshot_ids(metadata_location: str) -> list[int]:
    with open(urlparse(metadata_location).path) as f:
        return [s["snapshot-id"] for s in json.load(f).get("snapshots", [])]


@pytest.fixture()
def wh(tmp_path):
    return Warehouse(tmp_path / "warehouse")


def test_a_step_commits_its_tables_and_the_ledger_names_them(wh):
    with wh.transaction("r1", "extract_offsets") as tx:
        tx.write("raw/group_members", _members(3, "a"))
        tx.writer("raw/quarantine")  # written, empty
    assert wh.catalog_config.sqlite_path == wh.root.with_name("warehouse.catalog.db")
    tables = _catalog_rows(wh)
    assert {("raw", "group_members"), ("raw", "quarantine"), ("meta", "commits")} <= set(tables)
    sid = wh.snapshot_id("raw/group_members", "r1")
    assert sid in _snapshot_ids(tables[("raw", "group_members")])
    assert wh.read_arrow("raw/group_members", "r1").equals(_members(3, "a"))
    assert wh.row_count("raw/group_members", "r1") == 3
    assert wh.exists("raw/quarantine", "r1") and wh.read_arrow("raw/quarantine", "r1").num_rows == 0
    assert not wh.exists("raw/znodes", "r1") and wh.read_arrow("raw/znodes", "r1").num_rows == 0
    assert wh.run_ids("raw/group_members") == ["r1"]


def test_rerun_replaces_the_partition_and_leaves_other_runs(wh):
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(3, "a"))
    with wh.transaction("r2", "s") as tx:
        tx.write("raw/group_members", _members(2, "b"))
    first = wh.snapshot_id("raw/group_members", "r1")
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(1, "c"))
    assert wh.read_arrow("raw/group_members", "r1").equals(_members(1, "c"))
    assert wh.read_arrow("raw/group_members", "r2").equals(_members(2, "b"))
    # the earlier state of r1 is still there to time-travel to
    old = wh.catalog.load_table(("raw", "group_members")).scan(snapshot_id=first).to_arrow()
    assert sorted(old.column("group_id").to_pylist()) == ["a-0", "a-1", "a-2"]


def test_a_failed_step_leaves_nothing_visible(wh):
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(2, "a"))
    with pytest.raises(RuntimeError, match="boom"), wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(5, "x"))
        tx.write("raw/group_assignments", pa.Table.from_pylist([], schema=SCHEMAS["raw/group_assignments"]))
        raise RuntimeError("boom")
    assert wh.read_arrow("raw/group_members", "r1").equals(_members(2, "a"))
    assert not wh.exists("raw/group_assignments", "r1")
    assert not list(wh.root.glob("raw/*/.staging.*"))


def test_steps_of_a_run_keep_their_own_rows_of_a_shared_table(wh):
    quarantine = SCHEMAS["raw/quarantine"]

    def rows(source):
        return pa.Table.from_pylist([{"source": source, "location": "f:1", "reason": "bad", "raw": b"\x00"}],
                                    schema=quarantine)

    with wh.transaction("r1", "extract_offsets") as tx:
        tx.write("raw/quarantine", rows("offsets"))
    with wh.transaction("r1", "extract_zk") as tx:
        tx.write("raw/quarantine", rows("zk"))
    with wh.transaction("r1", "extract_offsets") as tx:  # again: replaces only its own rows
        tx.write("raw/quarantine", rows("offsets"))
    got = wh.read_arrow("raw/quarantine", "r1")
    assert sorted(got.column("source").to_pylist()) == ["offsets", "zk"]


def test_tables_of_a_new_namespace_created_side_by_side(wh, tmp_path):
    """A Spark step writes its tables from several threads, each creating its table on first use
    in a namespace nobody created yet; a second process's warehouse creating the same namespace
    and tables at the same time finds them made: every table is created once."""
    from concurrent.futures import ThreadPoolExecutor

    core = sorted(t for t in SCHEMAS if t.startswith("core/"))[:8]
    other = Warehouse(wh.root)  # its own catalog connection, as another process's
    with ThreadPoolExecutor(len(core)) as pool:
        made = list(pool.map(lambda t: (wh if core.index(t) % 2 else other).table(t), core + core))
    assert [".".join(m.name()) for m in made] == [t.replace("/", ".") for t in core + core]
    assert sorted(f"{ns}/{name}" for ns, name in _catalog_rows(wh)) == core
