"""A team's Iceberg catalog on a real PostgreSQL server (started on loopback by the test): the
demo cluster's files extracted with ``--catalog postgresql://...`` (pyiceberg's SQL catalog
through psycopg2, no JVM) hold, row for row, what the Parquet warehouse holds after the same
commands; PostgreSQL's own ``iceberg_tables`` rows name every table the run committed, each at
the metadata file the tables' snapshots are in, and no SQLite catalog appears beside the
warehouse. Spark on the same catalog (JDBC): ``test_iceberg_stores.py`` (matrix)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.postgres import Postgres

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "pipelines" / "demo" / "data"
RUN = "pg-1"
EXTRACTS = (("zk-snapshot", DEMO / "zookeeper"), ("offsets", DEMO / "kafka-logs"))


def _kaudit(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pipelines", "--run-id", RUN, *args], capture_output=True,
                          text=True, env=os.environ, timeout=600)
    assert done.returncode == 0, f"kaudit {' '.join(args)}:\n{done.stdout}\n{done.stderr[-3000:]}"


def test_extracts_commit_to_a_catalog_on_postgresql(tmp_path):
    parquet, iceberg = tmp_path / "parquet", tmp_path / "iceberg"
    with Postgres().start() as pg:
        for command, path in EXTRACTS:
            _kaudit("--warehouse", str(parquet), "extract", command, str(path))
            _kaudit("--warehouse", str(iceberg), "--catalog", pg.uri,
                    "extract", command, str(path))
        assert not iceberg.with_name("iceberg.catalog.db").exists(), "a SQLite catalog beside the warehouse"
        wh = Warehouse(iceberg, catalog=pg.uri)
        written = sorted({t for (_, t) in wh.snapshots(RUN)})
        assert {"raw/znodes", "raw/offset_commits", "raw/group_metadata"} <= set(written), written
        compared = 0
        for table in written:
            want = read_arrow(Warehouse(parquet), table, RUN, with_run_id=False)
            got = wh.read_arrow(table, RUN)
            assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, want.to_pylist())), table
            compared += want.num_rows
        assert compared > 0
        # the server's own answer: one catalog row per table, its metadata file in the warehouse
        rows = pg.sql("select table_namespace, table_name, metadata_location from iceberg_tables "
                      "where catalog_name = 'kaudit'")
        catalogued = {f"{ns}/{name}": location for ns, name, location in rows}
        assert set(written) <= set(catalogued), (written, sorted(catalogued))
        for table in written:
            location = catalogued[table]
            assert location.startswith(iceberg.as_uri() + f"/{table}/metadata/"), location
            assert Path(location.removeprefix("file://")).is_file(), location
    print(f"\n{len(written)} tables, {compared} rows compared; {len(catalogued)} rows in PostgreSQL's iceberg_tables")
