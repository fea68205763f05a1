"""The marts and the history as Iceberg tables of the catalog: real dbt (dbt-spark, target
`session`) on the test session's real local Spark with Iceberg's runtime, over tiny raw and core
tables committed to the warehouse (pyiceberg, SQLite catalog). The inputs and the expected lags
are those of test_dbt_build.py (the script's own commits and log ends); one mart and one
snapshot with what they need are built, so the test stays short."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo
from readme_queries import run_python_blocks, section  # (tests/integration)
from test_dbt_build import at, first_run_inputs, write  # (tests/integration: the Parquet build's inputs)

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

pytestmark = pytest.mark.integration

SELECT = ["+consumer_lag", "+snap_partition_ownership"]
OWNERS, ZK_OFFSETS = "core/partition_owners", "core/zk_offsets"


def mart_rows(iceberg: Warehouse, mart: str, run_id: str, snapshot_id: int | None = None) -> list[tuple]:
    """The run's rows of ``mart`` (at the snapshot the run's ledger recorded, unless given)."""
    sid = snapshot_id or iceberg.snapshots(run_id)[("dbt", f"marts/{mart}")]
    data = iceberg.catalog.load_table(("marts", mart)).scan(
        row_filter=EqualTo("run_id", run_id), snapshot_id=sid).to_arrow()
    return sorted(tuple(r[c] for c in ("source", "partition", "committed_offset", "log_end_offset", "lag", "run_id"))
                  for r in data.to_pylist())


def test_marts_and_history_are_iceberg_tables_of_the_catalog(spark, tmp_path, monkeypatch):
    # the selected models and the snapshot only: their data tests run in the full build's
    # test (test_dbt_build.py)
    monkeypatch.setenv("DBT_INDIRECT_SELECTION", "empty")
    iceberg = Warehouse(tmp_path / "warehouse")  # (as models/README.md's queries name it)
    first_run_inputs(iceberg, "r0")
    run_dbt(RunContext(iceberg, "r0", quiet=True), select=SELECT)

    r0 = [("kafka", 0, 15, 100, 85, "r0"), ("kafka", 1, 50, 100, 50, "r0"), ("zookeeper", 0, 12, 100, 88, "r0")]
    assert mart_rows(iceberg, "consumer_lag", "r0") == r0
    # kaudit.marts.consumer_lag: the contract's columns, identity-partitioned by run_id; the
    # ledger names the snapshot step `dbt` left it at, and the run's rows there
    ice = iceberg.catalog.load_table(("marts", "consumer_lag"))
    assert sorted(f.name for f in ice.schema().fields) == sorted([*MARTS["consumer_lag"].names, "run_id"])
    assert [(ice.schema().find_field(f.source_id).name, str(f.transform)) for f in ice.spec().fields] == \
        [("run_id", "identity")]
    ledger = iceberg.catalog.load_table(("meta", "commits")).scan(row_filter=EqualTo("step", "dbt")).to_arrow()
    recorded = {r["table_name"]: r for r in ledger.to_pylist()}
    assert set(recorded) == {"marts/consumer_lag", "snapshots/snap_partition_ownership"}
    assert recorded["marts/consumer_lag"]["rows"] == 3
    assert spark.sql("select count(*) as n from kaudit.marts.consumer_lag").first().n == 3

    # run 2: zg's partition changed owner, g's ZooKeeper offset moved, nothing from Kafka
    write(iceberg, OWNERS, "r2", [{"group_id": "zg", "topic": "t", "partition": 0, "broker_id": None,
                                   "owner": "zg_host-2-bbbb-0"}])
    write(iceberg, ZK_OFFSETS, "r2", [{"group_id": "g", "topic": "t", "partition": 0, "broker_id": None,
                                       "committed_offset": 30, "mtime": at(90)}])
    run_dbt(RunContext(iceberg, "r2", quiet=True), select=SELECT)
    assert mart_rows(iceberg, "consumer_lag", "r2") == [("zookeeper", 0, 30, None, None, "r2")]
    assert mart_rows(iceberg, "consumer_lag", "r0") == r0  # r0's partition untouched
    # the history: dbt's own snapshot (MERGE), with the runs that opened and closed each version
    history = sorted(
        (r.asDict() for r in spark.sql("select * from kaudit.snapshots.snap_partition_ownership").collect()),
        key=lambda r: r["dbt_valid_from_run_id"],
    )
    assert [(r["owner"], r["dbt_valid_from_run_id"], r["dbt_valid_to_run_id"]) for r in history] == [
        ("zg_host-1-aaaa-0", "r0", "r2"),
        ("zg_host-2-bbbb-0", "r2", None),
    ]
    assert history[0]["dbt_valid_to"] == history[1]["dbt_valid_from"]

    # the table holds both runs; r2 built again with its inputs emptied: its partition is
    # emptied too, r0's stays as it was
    runs = spark.sql("select run_id, count(*) as n from kaudit.marts.consumer_lag group by run_id").collect()
    assert sorted((r.run_id, r.n) for r in runs) == [("r0", 3), ("r2", 1)]
    first = iceberg.snapshots("r2")[("dbt", "marts/consumer_lag")]
    for table in (OWNERS, ZK_OFFSETS):
        iceberg.write_table(table, "r2", pa.Table.from_pylist([], SCHEMAS[table]))
    run_dbt(RunContext(iceberg, "r2", quiet=True), select=["+consumer_lag"])
    emptied = iceberg.snapshots("r2")[("dbt", "marts/consumer_lag")]
    assert emptied != first
    assert mart_rows(iceberg, "consumer_lag", "r2") == []
    assert mart_rows(iceberg, "consumer_lag", "r0", snapshot_id=emptied) == r0
    # "as of run r2's first build": a time-travel read at the snapshot it recorded then
    assert mart_rows(iceberg, "consumer_lag", "r2", snapshot_id=first) == [("zookeeper", 0, 30, None, None, "r2")]

    # models/README.md's queries of the marts run as written (pyiceberg to Arrow,
    # pandas and DuckDB, no Spark) from the directory that holds it: r0's lags, the two versions
    # of zg's owner, r0's groups (r2's partition is empty now)
    monkeypatch.chdir(tmp_path)
    results = run_python_blocks(section("Querying the marts"))
    assert [n for _, n in results] == [3, 2, 2], results
