"""The one reader (:mod:`pipelines.warehouse.reading`) on an Iceberg warehouse: raw, core and mart tables
read at the snapshot the run's ledger recorded, as their declared Arrow schemas; a run's
documents (validation results, the report) published as files.

The marts are committed here the way dbt's Iceberg tables look to a reader: the Iceberg table
``marts.<name>`` with the contract's columns and ``run_id``, timestamps in microseconds (Spark
writes them so), committed by pyiceberg, then named in the ledger. The expected rows are the
rows each test writes; the ledger and the snapshots are also checked with pyiceberg's own scans."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from pipelines.quality.marts import MARTS
from pipelines.quality.run import read_results
from pipelines.warehouse.iceberg import schemas
from pipelines.warehouse.reading import read_arrow, read_built, row_count
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

LAG = MARTS["consumer_lag"]
US = pa.timestamp("us", tz="UTC")


def _lag_rows(n: int, tag: str, micros: int = 0) -> list[dict]:
    at = datetime(2024, 5, 1, 12, 0, 0, 123000 + micros, tzinfo=UTC)
    return [{"source": "kafka", "group_id": f"{tag}-{i}", "topic": "t", "partition": i, "broker_id": None,
             "committed_offset": 10 * i, "log_end_offset": 10 * i + 5, "lag": 5, "committed_at": at,
             "committed_record_at": None, "log_end_at": at, "lag_seconds": 1.5 * i, "lag_seconds_exact": i % 2 == 0}
            for i in range(n)]


def _commit_mart(wh: Warehouse, run_id: str, rows: list[dict], record: bool = True) -> int:
    """The mart ``consumer_lag``'s partition of ``run_id`` replaced by ``rows`` as Spark writes
    them (timestamps in microseconds); recorded in the ledger unless ``record`` is False (a
    build killed before its ledger row). Returns the snapshot id."""
    from pyiceberg.expressions import EqualTo

    ice = wh.table("marts/consumer_lag", LAG)
    write = schemas.write_schema("marts/consumer_lag", LAG)
    data = pa.Table.from_pylist([{**r, "run_id": run_id} for r in rows], schema=write)
    assert data.schema.field("committed_at").type == US
    txn = ice.transaction()
    with warnings.catch_warnings():  # "did not match any records": the run's first build
        warnings.simplefilter("ignore", UserWarning)
        txn.delete(EqualTo("run_id", run_id))
    txn.append(data)
    sid = txn.commit_transaction().current_snapshot().snapshot_id
    if record:
        wh.record(run_id, "dbt", [("marts/consumer_lag", sid, len(rows))])
    return sid


@pytest.fixture()
def wh(tmp_path):
    return Warehouse(tmp_path / "warehouse")


def _expected(rows: list[dict]) -> pa.Table:
    """The rows as the declared schema, timestamps floored to milliseconds."""
    table = pa.Table.from_pylist(rows, schema=pa.schema([f.with_type(US) if f.type == LAG.field("committed_at").type
                                                         else f for f in LAG]))
    cols = [pc.floor_temporal(c, unit="millisecond").cast(f.type) if f.type != c.type else c
            for c, f in zip(table.columns, LAG, strict=True)]
    return pa.Table.from_arrays(cols, schema=LAG)


def test_a_mart_reads_as_its_contract_with_milliseconds_floored(wh):
    rows = _lag_rows(3, "a", micros=999)  # .123999 s: the Parquet layout stores .123
    _commit_mart(wh, "r1", rows)
    got = read_built(wh, "marts/consumer_lag", "r1")
    assert got.schema == LAG
    assert got.equals(_expected(rows))
    assert got.column("committed_at")[0].as_py() == datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
    assert row_count(wh, "marts/consumer_lag", "r1") == 3
    with_run = read_arrow(wh, "marts/consumer_lag", "r1")
    assert with_run.column("run_id").to_pylist() == ["r1"] * 3


def test_columns_and_filters_as_on_parquet(wh):
    _commit_mart(wh, "r1", _lag_rows(4, "a"))
    got = read_arrow(wh, "marts/consumer_lag", "r1", ["group_id", "lag_seconds"], with_run_id=False)
    assert got.schema == pa.schema([LAG.field("group_id"), LAG.field("lag_seconds")])
    assert got.column("lag_seconds").to_pylist() == [0.0, 1.5, 3.0, 4.5]
    odd = read_arrow(wh, "marts/consumer_lag", "r1", ["group_id"], ds.field("partition").isin([1, 3]),
                     with_run_id=False)
    assert odd.column("group_id").to_pylist() == ["a-1", "a-3"]


def test_a_run_reads_its_own_snapshot_whatever_commits_after_it(wh):
    first = _commit_mart(wh, "r1", _lag_rows(2, "a"))
    _commit_mart(wh, "r2", _lag_rows(5, "b"))  # another run: a later snapshot of the same table
    _commit_mart(wh, "r1", _lag_rows(7, "x"), record=False)  # a build of r1 killed before its ledger row
    assert wh.snapshot_id("marts/consumer_lag", "r1") == first
    assert read_built(wh, "marts/consumer_lag", "r1").column("group_id").to_pylist() == ["a-0", "a-1"]
    assert row_count(wh, "marts/consumer_lag", "r1") == 2
    assert row_count(wh, "marts/consumer_lag", "r2") == 5
    # the table's current snapshot holds the unrecorded rows: only the ledger hides them
    current = wh.catalog.load_table(("marts", "consumer_lag")).scan().to_arrow()
    assert sorted(set(current.column("group_id").to_pylist()))[-1] == "x-6"
    # the same run built again and recorded: now that snapshot is the run's
    again = _commit_mart(wh, "r1", _lag_rows(1, "y"))
    assert wh.snapshot_id("marts/consumer_lag", "r1") == again
    assert read_built(wh, "marts/consumer_lag", "r1").column("group_id").to_pylist() == ["y-0"]


def test_a_mart_not_built_is_none_and_one_built_empty_is_empty(wh):
    assert read_built(wh, "marts/consumer_lag", "r1") is None
    assert row_count(wh, "marts/consumer_lag", "r1") is None
    empty = read_arrow(wh, "marts/consumer_lag", "r1", with_run_id=False)
    assert empty.num_rows == 0 and empty.schema == LAG
    _commit_mart(wh, "r1", [])
    got = read_built(wh, "marts/consumer_lag", "r1")
    assert got is not None and got.num_rows == 0 and got.schema == LAG
    assert row_count(wh, "marts/consumer_lag", "r1") == 0


def test_every_mart_contract_maps_to_an_iceberg_schema_and_back(wh):
    for name, declared in MARTS.items():
        table = f"marts/{name}"
        ice = schemas.iceberg_schema(table)
        assert [f.name for f in ice.fields] == [*declared.names, "run_id"], name
        assert schemas.write_schema(table).names == [*declared.names, "run_id"]
    # a mart with every kind of contract type, written through a step's transaction
    kinds = {"string", "int32", "int64", "bool", "double", "timestamp[ms, tz=UTC]"}
    name = next(n for n, s in MARTS.items() if {str(f.type) for f in s} >= kinds - {"int32"})
    declared = MARTS[name]
    row = {f.name: None for f in declared}
    data = pa.Table.from_pylist([row], schema=declared)
    with wh.transaction("r1", "dbt") as tx:
        tx.write(f"marts/{name}", data, declared)
    assert read_built(wh, f"marts/{name}", "r1").equals(data)


def test_raw_and_core_reads_go_through_the_same_reader(wh):
    members = SCHEMAS["raw/group_members"]
    data = pa.Table.from_pylist([{n: None for n in members.names} | {"group_id": g} for g in ("g1", "g2")],
                                schema=members)
    with wh.transaction("r1", "extract_offsets") as tx:
        tx.write("raw/group_members", data)
    assert read_arrow(wh, "raw/group_members", "r1", with_run_id=False).equals(data)
    assert read_arrow(wh, "raw/group_members", "r1", ["group_id"], with_run_id=False).column(0).to_pylist() == \
        ["g1", "g2"]
    assert row_count(wh, "raw/group_members", "r1") == 2
    assert row_count(wh, "raw/group_members", "r2") is None


def test_documents_of_a_step_are_published_as_files_and_commit_no_table(wh):
    entries = [{"suite": "s", "expectation": "e", "success": True, "unexpected_count": 0}]
    with wh.transaction("r1", "validate") as tx:
        out = tx.staging_dir("validation")
        (out / "failures").mkdir(parents=True)
        (out / "results.json").write_text(json.dumps(entries))
    assert read_results(wh, "r1") == entries
    assert (wh.partition_dir("validation", "r1") / "failures").is_dir()
    assert not list(wh.root.glob("validation/.staging*"))
    assert wh.snapshots("r1") == {}  # no table, no ledger row
    assert not wh.catalog.table_exists(("meta", "commits"))
    # validated again: the run's documents replaced whole
    with wh.transaction("r1", "validate") as tx:
        out = tx.staging_dir("validation")
        out.mkdir(parents=True)
        (out / "results.json").write_text("[]")
    assert read_results(wh, "r1") == []
    assert not (wh.partition_dir("validation", "r1") / "failures").exists()


def test_a_failed_step_publishes_no_document(wh):
    with pytest.raises(RuntimeError, match="boom"), wh.transaction("r1", "report") as tx:
        out = tx.staging_dir("reports")
        out.mkdir(parents=True)
        (out / "summary.json").write_text("{}")
        raise RuntimeError("boom")
    assert not wh.exists("reports", "r1") and not wh.partition_dir("reports", "r1").exists()
    assert not list(wh.root.glob("reports/.staging*"))


def test_threads_of_one_process_open_a_new_catalog_once(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    wh = Warehouse(tmp_path / "warehouse")  # a new catalog file: its tables not created yet
    with ThreadPoolExecutor(4) as pool:
        catalogs = list(pool.map(lambda _: wh.catalog, range(4)))
    assert all(c is catalogs[0] for c in catalogs)
    assert wh.run_ids("raw/group_members") == []
