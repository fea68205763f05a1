"""dbt on an Iceberg warehouse against dbt on the Parquet layout, every mart row for row: real
dbt (dbt-spark) on the test session's real local Spark with Iceberg's runtime, over the same raw
and core tables (the Parquet build test's inputs: test_dbt_build.py) written to a Parquet
warehouse and committed to an Iceberg one. The oracle is the Parquet build (the layout the
suite checks against real clusters); the Iceberg marts are read with pyiceberg at the snapshots
the run's ledger recorded. Two full dbt builds: a case of `make matrix`, not of the default
suite (test_iceberg_dbt.py builds one mart and one snapshot there)."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from pyiceberg.expressions import EqualTo
from test_dbt_build import first_run_inputs  # (tests/integration: the Parquet build's inputs)

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.directory import Warehouse
from pipelines.warehouse.iceberg.warehouse import IcebergWarehouse

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

RUN = "r0"


def _iceberg_rows(iceberg: IcebergWarehouse, mart: str) -> pa.Table:
    sid = iceberg.snapshots(RUN)[("dbt", f"marts/{mart}")]
    scan = iceberg.catalog.load_table(("marts", mart)).scan(row_filter=EqualTo("run_id", RUN), snapshot_id=sid)
    return scan.to_arrow()


def _parquet_rows(parquet: Warehouse, mart: str) -> pa.Table:
    data = ds.dataset(parquet.root / "marts" / mart, format="parquet", partitioning="hive").to_table()
    if "run_id" not in data.column_names:  # no partition at all: the run's rows of the mart are none
        return data
    return data.filter(pc.equal(data["run_id"].cast(pa.string()), RUN))


def _rows(data: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(tuple(repr(r[c]) for c in columns) for r in data.to_pylist())


def test_every_mart_on_iceberg_holds_the_parquet_build_rows(spark, tmp_path):
    parquet, iceberg = Warehouse(tmp_path / "parquet"), IcebergWarehouse(tmp_path / "iceberg")
    timings = {}
    for wh in (parquet, iceberg):
        first_run_inputs(wh, RUN)
        started = time.monotonic()
        run_dbt(RunContext(wh, RUN, quiet=True))
        timings[wh.format] = time.monotonic() - started

    compared = {}
    for mart, declared in sorted(MARTS.items()):
        got, want = _iceberg_rows(iceberg, mart), _parquet_rows(parquet, mart)
        assert got.num_rows == want.num_rows, f"{mart}: {got.num_rows} rows on Iceberg, {want.num_rows} on Parquet"
        assert _rows(got, declared.names) == _rows(want, declared.names), f"{mart}: rows differ"
        compared[mart] = want.num_rows
    assert compared["consumer_lag"] == 3 and sum(compared.values()) > 10

    # the history: the same versions (owner or offset, the run that opened them) on both
    for snap, key in (("snap_partition_ownership", "owner"), ("snap_committed_offsets", "committed_offset")):
        want = spark.sql(f"select partition_key, {key}, dbt_valid_from_run_id from kaudit_snapshots.{snap}")
        got = spark.sql(f"select partition_key, {key}, dbt_valid_from_run_id from kaudit.snapshots.{snap}")
        assert sorted(map(tuple, got.collect())) == sorted(map(tuple, want.collect())), snap
        assert want.count() > 0, snap
    print(f"\n{len(compared)} marts, {sum(compared.values())} rows compared row for row; dbt build: "
          f"parquet {timings['parquet']:.1f}s, iceberg {timings['iceberg']:.1f}s")
