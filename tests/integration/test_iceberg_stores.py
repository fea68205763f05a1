"""The warehouse end to end on each store: the demo cluster's files extracted (pyiceberg
commits, no JVM) and built (Spark through iceberg-spark-runtime, the same catalog) on a real
S3-compatible server (S3Proxy on loopback) and with the catalog on a real PostgreSQL server;
every raw and core table read back with pyiceberg must hold, row for row, what the same
commands on the same files commit to a local directory with the embedded SQLite catalog (the
reference: the store the suite checks against ZooKeeper's and Kafka's own tools). Tables are
read at the snapshot the run's ledger names.

Each case runs two pipelines of `kaudit` commands (two Spark JVMs): a case of the matrix
(`make matrix`), not of the default suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "pipelines" / "demo" / "data"
RUN = "ice-1"


def _kaudit(args: list[str], env: dict | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "pipelines", "--run-id", RUN, *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=1800)
    assert done.returncode == 0, f"kaudit {' '.join(args)}:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done.stdout


def _pipeline(options: list[str], env: dict | None = None) -> None:
    _kaudit([*options, "extract", "zk-snapshot", str(DEMO / "zookeeper")], env)
    _kaudit([*options, "extract", "offsets", str(DEMO / "kafka-logs")], env)
    _kaudit([*options, "extract", "log-end", str(DEMO / "kafka-logs")], env)
    _kaudit([*options, "build", "--skip-dbt"], env)


def _rows(table: pa.Table) -> list:
    return sorted(repr(r) for r in table.to_pylist())


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Warehouse:
    """The reference: the pipeline on a local directory, the catalog a SQLite file beside it."""
    root = tmp_path_factory.mktemp("local") / "wh"
    _pipeline(["--warehouse", str(root)])
    assert root.with_name("wh.catalog.db").is_file()
    return Warehouse(root)


# columns that hold the wall-clock time of the step that wrote them, not data: two runs on the
# same inputs differ there, so only how many are set is compared, not their values
CLOCK = {"quality/validation_results": ("evaluated_at",)}


def _compare(parquet: Warehouse, iceberg: Warehouse) -> dict[str, int]:
    """Every raw and core table of the run (and the validation's results, when it ran), the
    reference warehouse ``parquet`` vs ``iceberg``: {table: rows compared}."""
    compared = {}
    for table in sorted(SCHEMAS):
        if not parquet.exists(table, RUN):
            assert not iceberg.exists(table, RUN), f"{table}: in the Iceberg warehouse only"
            continue
        assert iceberg.exists(table, RUN), f"{table}: written to Parquet, not committed to Iceberg"
        want = read_arrow(parquet, table, RUN, with_run_id=False)
        got = iceberg.read_arrow(table, RUN)
        assert got.schema == SCHEMAS[table], table
        assert got.num_rows == want.num_rows, f"{table}: {got.num_rows} rows in Iceberg, {want.num_rows} in Parquet"
        for column in CLOCK.get(table, ()):
            assert got.column(column).null_count == want.column(column).null_count, (table, column)
            got, want = got.drop_columns([column]), want.drop_columns([column])
        assert _rows(got) == _rows(want), f"{table}: rows differ"
        assert iceberg.row_count(table, RUN) == want.num_rows, table
        compared[table] = want.num_rows
    return compared


def _check(parquet: Warehouse, iceberg: Warehouse) -> None:
    compared = _compare(parquet, iceberg)
    # the run has what the demo cluster holds: znodes, commits, an audit
    for table in ("raw/znodes", "raw/offset_commits", "core/expected_assignment", "core/assignment_audit"):
        assert compared.get(table, 0) > 0, f"{table}: no rows to compare"
    print(f"\n{len(compared)} tables, {sum(compared.values())} rows compared row for row")
    # one ledger row per (step, table) the steps wrote, each naming a snapshot of its table
    steps = iceberg.snapshots(RUN)
    assert {s for s, _ in steps} >= {"build_core"}
    for (_, table), sid in steps.items():
        if sid is not None:
            assert iceberg.catalog.load_table(tuple(table.split("/"))).snapshot_by_id(sid) is not None


def test_s3_warehouse_holds_the_local_rows(local_run, tmp_path):
    from testkit.storage import S3Proxy

    with S3Proxy(tmp_path / "s3").start() as s3:
        s3.create_bucket("kaudit")
        location, local = "s3a://kaudit/warehouse", tmp_path / "local"
        options = ["--warehouse", location, "--warehouse-local", str(local),
                   "--catalog", str(tmp_path / "catalog.db")]
        _pipeline(options, s3.env())
        keys = s3.objects("kaudit")
        assert any(k.startswith("warehouse/core/assignment_audit/data/") for k in keys), keys[:20]
        assert not list(local.glob("*/*/*.parquet")), "table data left on the local disk"
        env = s3.env()
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            _check(local_run, Warehouse(local, location=location, catalog=str(tmp_path / "catalog.db")))
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def test_postgres_catalog_holds_the_local_rows(local_run, tmp_path):
    """The catalog on a real PostgreSQL server: pyiceberg (extract) and Spark's JDBC catalog
    (build) commit to the same ``iceberg_tables`` rows."""
    from testkit.postgres import Postgres

    root = tmp_path / "wh"
    with Postgres().start() as pg:
        _pipeline(["--warehouse", str(root), "--catalog", pg.uri])
        assert not root.with_name("wh.catalog.db").exists()
        iceberg = Warehouse(root, catalog=pg.uri)
        _check(local_run, iceberg)
        catalogued = {f"{ns}/{name}" for ns, name in pg.sql(
            "select table_namespace, table_name from iceberg_tables where catalog_name = 'kaudit'")}
        assert {t for (_, t) in iceberg.snapshots(RUN)} <= catalogued


def test_named_clusters_have_their_namespaces_in_the_one_catalog(tmp_path):
    """``--cluster``: MirrorMaker 2's two clusters (the demo's real 4.3.1 pair) extracted into
    ``clusters.<alias>`` namespaces of the one catalog, the cross-cluster audit built by Spark
    from them (its rows against MirrorMaker's own answers: test_real_mm2.py)."""
    from pipelines.demo import REAL

    data = REAL / "mm2-4.3.1"
    root = tmp_path / "wh"
    for alias in ("source", "target"):
        for command in ("offsets", "mm2"):
            _kaudit(["--warehouse", str(root), "--cluster", alias, "extract", command, str(data / alias / "logs")])
    _kaudit(["--warehouse", str(root), "build", "--skip-dbt"])
    wh = Warehouse(root)
    assert wh.catalog.table_exists(("clusters", "source", "raw", "mm2_checkpoints"))
    # the cluster's table files in its namespace's place under the one location, as Iceberg tables
    assert (root / "clusters" / "source" / "raw" / "mm2_checkpoints" / "metadata").is_dir()
    for table in ("core/mm2_failover", "core/mm2_findings"):
        assert wh.read_arrow(table, RUN).num_rows > 0, table
