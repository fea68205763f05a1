"""The warehouse's promises: a run's partition replaced whole, shared tables per step, empty reads."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pipelines.errors import UsageError
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.runs import new_run_id
from pipelines.warehouse.tables import RAW_LOG_END_OFFSETS, RAW_QUARANTINE
from pipelines.warehouse.warehouse import Warehouse


def _ends(*rows):
    return pa.Table.from_pylist(
        [dict(topic=t, partition=p, log_start_offset=0, log_end_offset=e, max_timestamp=None) for t, p, e in rows],
        schema=RAW_LOG_END_OFFSETS,
    )


def _quarantine(*locations):
    return pa.Table.from_pylist(
        [dict(source="x", location=loc, reason="bad", raw=b"\x00") for loc in locations], schema=RAW_QUARANTINE
    )


def test_run_id_default_is_utc_compact():
    from datetime import UTC, datetime

    assert new_run_id(datetime(2026, 11, 22, 4, 5, 6, tzinfo=UTC)) == "20261122T040506Z"


def _data_files(root, table: str) -> list:
    return sorted((root / table / "data").rglob("*.parquet"))


def test_write_read_roundtrip_adds_run_id_and_the_tables_partition(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", _ends(("t", 0, 5), ("t", 1, 7)))
    assert [f.parent.name for f in _data_files(tmp_path, "raw/log_end_offsets")] == ["run_id=r1"]
    got = read_arrow(wh, "raw/log_end_offsets", "r1")
    assert got.column("run_id").to_pylist() == ["r1", "r1"]
    assert got.column("log_end_offset").to_pylist() == [5, 7]
    # any Iceberg reader of the table's current state sees run_id as a column
    current = wh.catalog.load_table(("raw", "log_end_offsets")).scan().to_arrow()
    assert current.column("run_id").to_pylist() == ["r1", "r1"]


def test_rewrite_replaces_the_partition_whole(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", _ends(("t", 0, 5), ("t", 1, 7)))
    wh.write_table("raw/log_end_offsets", "r1", _ends(("u", 0, 1)))
    wh.write_table("raw/log_end_offsets", "r2", _ends(("v", 0, 2)))
    assert read_arrow(wh, "raw/log_end_offsets", "r1").column("topic").to_pylist() == ["u"]
    assert wh.run_ids("raw/log_end_offsets") == ["r1", "r2"]
    current = wh.catalog.load_table(("raw", "log_end_offsets")).scan().to_arrow()
    assert sorted(current.column("topic").to_pylist()) == ["u", "v"]


def test_failed_step_publishes_nothing_and_leaves_no_data_file(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", _ends(("t", 0, 5)))
    before = _data_files(tmp_path, "raw/log_end_offsets")
    with pytest.raises(RuntimeError):
        with wh.transaction("r1", step="offsets") as tx:
            tx.write("raw/log_end_offsets", _ends(("half", 0, 1)))
            tx.writer("raw/log_end_offsets").close()  # its data file written
            tx.write("raw/quarantine", _quarantine("f:1"))
            raise RuntimeError("killed mid-step")
    assert read_arrow(wh, "raw/log_end_offsets", "r1").column("topic").to_pylist() == ["t"]
    assert not wh.exists("raw/quarantine", "r1")
    assert _data_files(tmp_path, "raw/log_end_offsets") == before  # the failed step's file deleted


def test_shared_table_keeps_one_file_per_step(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/quarantine", "r1", _quarantine("a:1"), step="offsets")
    wh.write_table("raw/quarantine", "r1", _quarantine("b:1"), step="zk-snapshot")
    wh.write_table("raw/quarantine", "r1", _quarantine("b:2", "b:3"), step="zk-snapshot")
    got = sorted(read_arrow(wh, "raw/quarantine", "r1").column("location").to_pylist())
    assert got == ["a:1", "b:2", "b:3"]


def test_missing_partition_reads_empty_with_schema(tmp_path):
    got = read_arrow(Warehouse(tmp_path), "raw/log_end_offsets", "nope")
    assert got.num_rows == 0
    assert got.schema.names == RAW_LOG_END_OFFSETS.names + ["run_id"]


def test_empty_write_still_creates_a_readable_partition(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", RAW_LOG_END_OFFSETS.empty_table())
    assert wh.exists("raw/log_end_offsets", "r1")
    assert read_arrow(wh, "raw/log_end_offsets", "r1").num_rows == 0


@pytest.mark.parametrize("bad", ["", "a/b", "x=y", ".hidden", "../../x", "a b", "v1.2", "x" * 65])
def test_unsafe_run_ids_are_refused(tmp_path, bad):
    with pytest.raises(UsageError, match="a run id is letters, digits, '-' and '_' only"):
        Warehouse(tmp_path).partition_dir("raw/znodes", bad)


def test_run_meta_is_per_step(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_meta("r1", "extract_zk", {"min_mzxid": 1, "max_mzxid": 9})
    wh.write_meta("r1", "extract_offsets", {"files": 2})
    assert wh.read_meta("r1", "extract_zk") == {"max_mzxid": 9, "min_mzxid": 1}
    assert wh.read_meta("r1", "missing") == {}
