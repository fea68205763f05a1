"""`dbt build` over the `thrift` profile against a real Spark Thrift Server
(HiveThriftServer2 from the pyspark wheel, on 127.0.0.1 and a free port, torn down after),
started as a user starts it for the warehouse (with the warehouse's catalog settings:
``pipelines.warehouse.iceberg.spark.submit_args``): dbt builds the marts and the history as
Iceberg tables of the server's catalog `kaudit`, on the build's branch from each of its
connections, published when the build succeeded; a SQL client over thrift reads them by their
catalog names."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.context import RunContext
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.tables import SCHEMAS

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

SPARK_BIN = (Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
             / "pyspark" / "bin")
UTC = dt.UTC


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _thrift_server(home: Path, args: list[str]):
    """A HiveThriftServer2 (local[2], Derby metastore and warehouse dir in ``home``) on 127.0.0.1
    and a free port, started with the spark-submit options ``args`` too."""
    port = free_port()
    log = (home / "server.log").open("wb")
    cmd = [
        str(SPARK_BIN / "spark-submit"),
        "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
        "--name", "kaudit-test-thrift",
        "--master", "local[2]",
        "--driver-memory", "768m",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.sql.session.timeZone=UTC",
        "--conf", f"spark.sql.warehouse.dir={home / 'spark-warehouse'}",
        "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
                  f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
        *args,
        "--hiveconf", f"hive.server2.thrift.port={port}",
        "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
        "spark-internal",
    ]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.Popen(cmd, cwd=home, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                pytest.fail(f"Thrift Server exited with {proc.returncode}: {(home / 'server.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"Thrift Server did not listen on {port}: {(home / 'server.log').read_text()[-2000:]}")
                time.sleep(2)
        yield "127.0.0.1", port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group (start_new_session)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture()
def iceberg_warehouse(tmp_path):
    from pipelines.warehouse.warehouse import Warehouse

    return Warehouse(tmp_path / "wh")


@pytest.fixture()
def iceberg_thrift_server(tmp_path, iceberg_warehouse):
    """A Thrift Server whose catalog ``kaudit`` is the Iceberg warehouse's, started as a user
    starts one (``pipelines.warehouse.iceberg.spark.submit_args``)."""
    from pipelines.warehouse.iceberg.spark import submit_args

    home = tmp_path / "thrift"
    home.mkdir()
    with _thrift_server(home, submit_args(iceberg_warehouse)) as address:
        yield address


def test_dbt_build_over_thrift(iceberg_thrift_server, iceberg_warehouse, monkeypatch):
    """The mart's lags are those of the script's own commits and log ends; the build's ledger
    row names the snapshot `main` of the mart is at, which the server's catalog holds; the
    history's MERGE ran over thrift too."""
    from pyhive import hive
    from test_iceberg_dbt import mart_rows

    host, port = iceberg_thrift_server
    monkeypatch.setenv("KAUDIT_THRIFT_HOST", host)
    monkeypatch.setenv("KAUDIT_THRIFT_PORT", str(port))
    monkeypatch.setenv("KAUDIT_THRIFT_THREADS", "2")  # two connections: each writes on the branch
    warehouse = iceberg_warehouse
    t0 = dt.datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    commits = [
        {
            "group_id": "g", "topic": "t", "partition": 0, "committed_offset": off, "leader_epoch": None,
            "metadata": "", "commit_timestamp": t0 + dt.timedelta(minutes=i), "expire_timestamp": None,
            "is_tombstone": False, "key_version": 1, "value_version": 3, "offsets_partition": 3,
            "log_offset": 10 + i, "producer_id": -1, "is_transactional": False, "txn_state": None,
            "segment_file": "00000000000000000000.log",
        }
        for i, off in enumerate([5, 9, 7])
    ]
    warehouse.write_table("raw/offset_commits", "t1", pa.Table.from_pylist(commits, SCHEMAS["raw/offset_commits"]))
    warehouse.write_table(
        "raw/log_end_offsets",
        "t1",
        pa.Table.from_pylist(
            [{"topic": "t", "partition": 0, "log_start_offset": 0, "log_end_offset": 12, "max_timestamp": t0}],
            SCHEMAS["raw/log_end_offsets"],
        ),
    )

    # kept lean: sources hook, staging and intermediate views, data tests, a run-partitioned
    # mart and a snapshot (the unit tests run on the embedded session: test_dbt_build.py)
    run_dbt(
        RunContext(warehouse, "t1", quiet=True), target="thrift", select=["+consumer_lag", "snap_committed_offsets"],
    )

    want = [("kafka", 0, 7, 12, 5, "t1")]
    assert mart_rows(warehouse, "consumer_lag", "t1") == want  # pyiceberg, at the ledger's snapshot
    assert {t for (step, t) in warehouse.snapshots("t1") if step == "dbt"} == \
        {"marts/consumer_lag", "snapshots/snap_committed_offsets"}
    history = warehouse.catalog.load_table(("snapshots", "snap_committed_offsets")).scan().to_arrow().to_pylist()
    got = [(r["partition_key"], r["committed_offset"], r["dbt_valid_from_run_id"], r["dbt_valid_to_run_id"])
           for r in history]
    assert got == [("kafka|g|t||0", 7, "t1", None)]
    for table in (("marts", "consumer_lag"), ("snapshots", "snap_committed_offsets")):  # published: main only
        assert set(warehouse.catalog.load_table(table).metadata.refs) == {"main"}
    columns = ("source", "partition", "committed_offset", "log_end_offset", "lag", "run_id")
    with hive.connect(host=host, port=port, username="kaudit") as conn:
        cursor = conn.cursor()
        cursor.execute(f"select {', '.join(f'`{c}`' for c in columns)} from kaudit.marts.consumer_lag")
        assert sorted(cursor.fetchall()) == want
        # the table is an Iceberg table of the server's catalog: its snapshots are the catalog's
        cursor.execute("select snapshot_id from kaudit.marts.consumer_lag.snapshots")
        on_server = {r[0] for r in cursor.fetchall()}
    assert warehouse.snapshots("t1")[("dbt", "marts/consumer_lag")] in on_server
