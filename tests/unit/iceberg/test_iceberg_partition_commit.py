"""A step's rows of a table replace its partition in one Iceberg snapshot (pyiceberg, no JVM):
the files of the partition removed and the data files the step's writer wrote added together,
other runs' rows kept.

The expected rows are the rows each test writes; the snapshots are counted in the metadata JSON
Iceberg writes, read without pyiceberg."""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from test_iceberg_warehouse import MEMBERS, _members  # (tests/unit/iceberg)

from pipelines.warehouse import writer
from pipelines.warehouse.iceberg import partition_commit
from pipelines.warehouse.warehouse import Warehouse


def _snapshots(wh: Warehouse, table: tuple[str, str]) -> list[dict]:
    with open(urlparse(wh.catalog.load_table(table).metadata_location).path) as f:
        return json.load(f).get("snapshots", [])


@pytest.fixture()
def wh(tmp_path):
    return Warehouse(tmp_path / "warehouse")


def test_a_rerun_replaces_its_partition_in_one_snapshot(wh, monkeypatch):
    monkeypatch.setattr(writer, "FLUSH_BYTES", 1)  # every batch written as a data file of its own
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(3, "a"))
    with wh.transaction("r2", "s") as tx:
        tx.write("raw/group_members", _members(4, "b"))
    before = _snapshots(wh, ("raw", "group_members"))
    rows = _members(5, "c")
    with wh.transaction("r1", "s") as tx:
        for batch in (rows.slice(0, 2), rows.slice(2, 2), rows.slice(4)):  # three batches, three files
            tx.write("raw/group_members", batch)
    after = _snapshots(wh, ("raw", "group_members"))
    added = [s for s in after if s["snapshot-id"] not in {b["snapshot-id"] for b in before}]
    assert len(added) == 1  # the old files removed and the three batches' files added together
    summary = added[0]["summary"]
    assert (summary["operation"], summary["added-records"], summary["deleted-records"]) == ("overwrite", "5", "3")
    assert summary["added-data-files"] == "3"
    assert added[0]["snapshot-id"] == wh.snapshot_id("raw/group_members", "r1")
    assert wh.read_arrow("raw/group_members", "r1").equals(_members(5, "c"))
    assert wh.read_arrow("raw/group_members", "r2").equals(_members(4, "b"))
    assert wh.row_count("raw/group_members", "r1") == 5


def test_a_step_that_stages_no_rows_empties_its_partition(wh):
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(2, "a"))
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", MEMBERS.empty_table())
    assert wh.exists("raw/group_members", "r1")
    assert wh.read_arrow("raw/group_members", "r1").num_rows == 0
    assert wh.row_count("raw/group_members", "r1") == 0


def test_files_not_of_the_partition_alone_are_left_to_pyiceberg_delete(wh):
    # an unpartitioned table: its files may hold any run's rows, none is removed whole
    schema = pa.schema([("run_id", pa.string()), ("n", pa.int64())])
    wh.catalog.create_namespace_if_not_exists(("other",))
    ice = wh.catalog.create_table(("other", "unpartitioned"), schema=schema)
    ice.append(pa.table({"run_id": ["r1", "r2"], "n": [1, 2]}, schema=schema))
    txn = wh.catalog.load_table(("other", "unpartitioned")).transaction()
    assert partition_commit.partition_files(txn, ice.io, "main", {"run_id": "r1"}) is None
    # a partitioned table's files of the run are its partition's alone
    with wh.transaction("r1", "s") as tx:
        tx.write("raw/group_members", _members(2, "a"))
    with wh.transaction("r2", "s") as tx:
        tx.write("raw/group_members", _members(1, "b"))
    members = wh.catalog.load_table(("raw", "group_members"))
    files = partition_commit.partition_files(members.transaction(), members.io, "main", {"run_id": "r1"})
    assert [f.record_count for f in files] == [2]
