"""The warehouse's promises: atomic run partitions, shared tables per step, empty reads."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from pipelines.errors import UsageError
from pipelines.warehouse.directory import Warehouse
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.runs import new_run_id
from pipelines.warehouse.tables import RAW_LOG_END_OFFSETS, RAW_QUARANTINE


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


def test_write_read_roundtrip_adds_run_id_and_hive_layout(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", _ends(("t", 0, 5), ("t", 1, 7)))
    assert (tmp_path / "raw/log_end_offsets/run_id=r1").is_dir()
    got = read_arrow(wh, "raw/log_end_offsets", "r1")
    assert got.column("run_id").to_pylist() == ["r1", "r1"]
    assert got.column("log_end_offset").to_pylist() == [5, 7]
    # any engine with hive partitioning sees run_id as a column
    dataset = ds.dataset(tmp_path / "raw/log_end_offsets", format="parquet", partitioning="hive")
    assert dataset.to_table().column("run_id").to_pylist() == ["r1", "r1"]


def test_rewrite_replaces_the_partition_whole(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", _ends(("t", 0, 5), ("t", 1, 7)))
    wh.write_table("raw/log_end_offsets", "r1", _ends(("u", 0, 1)))
    wh.write_table("raw/log_end_offsets", "r2", _ends(("v", 0, 2)))
    assert read_arrow(wh, "raw/log_end_offsets", "r1").column("topic").to_pylist() == ["u"]
    assert wh.run_ids("raw/log_end_offsets") == ["r1", "r2"]
    leftovers = [p.name for p in (tmp_path / "raw/log_end_offsets").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_failed_step_publishes_nothing_and_leaves_no_staging(tmp_path):
    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", _ends(("t", 0, 5)))
    with pytest.raises(RuntimeError):
        with wh.transaction("r1", step="offsets") as tx:
            tx.write("raw/log_end_offsets", _ends(("half", 0, 1)))
            tx.write("raw/quarantine", _quarantine("f:1"))
            raise RuntimeError("killed mid-step")
    assert read_arrow(wh, "raw/log_end_offsets", "r1").column("topic").to_pylist() == ["t"]
    assert not wh.exists("raw/quarantine", "r1")
    assert [p.name for p in (tmp_path / "raw/log_end_offsets").iterdir()] == ["run_id=r1"]


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


def test_a_file_that_is_not_its_declared_schema_fails_the_reader(tmp_path):
    """A raw/core file with another type or an undeclared column is an error naming the file,
    never a silent cast; a KRaft-only column a ZooKeeper-built core file lacks reads as null."""
    import pyarrow.parquet as pq

    from pipelines.warehouse.reading import SchemaMismatch
    from pipelines.warehouse.tables import SCHEMAS

    wh = Warehouse(tmp_path)
    part = wh.partition_dir("raw/log_end_offsets", "r1")
    part.mkdir(parents=True)
    retyped = RAW_LOG_END_OFFSETS.set(1, pa.field("partition", pa.int64()))
    pq.write_table(pa.Table.from_pylist([dict(topic="t", partition=0)], schema=retyped), part / "part-x.parquet")
    with pytest.raises(
        SchemaMismatch, match=r"part-x.parquet: raw/log_end_offsets .*partition is int64, declared int32"
    ):
        read_arrow(wh, "raw/log_end_offsets", "r1")
    brokers = SCHEMAS["core/brokers"]
    old = pa.schema([f for f in brokers if f.name not in ("rack", "fenced")])
    part = wh.partition_dir("core/brokers", "r1")
    part.mkdir(parents=True)
    row = dict(broker_id=1, host="h", port=9092, endpoints=[])
    pq.write_table(pa.Table.from_pylist([row], schema=old), part / "p.parquet")
    assert read_arrow(wh, "core/brokers", "r1", with_run_id=False).to_pylist() == [
        {**row, "rack": None, "fenced": None}
    ]
