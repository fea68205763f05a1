"""Session-scoped real components: a ZooKeeper 3.8 server and a local SparkSession."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.zk_server import ZK_HOME, start_zk

REPO = Path(__file__).resolve().parents[1]
# Files written by real ZooKeeper servers and Kafka clusters, copied in with their sources
# and licences (their README files)
REAL_FIXTURES = REPO / "tests" / "fixtures" / "real"


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory):
    """A real ZooKeeper (Debian ``zkServer.sh start-foreground``) on 127.0.0.1 and a free port."""
    if not (ZK_HOME / "bin" / "zkServer.sh").exists():
        pytest.fail("ZooKeeper is not installed: run `make test` (installs Debian's zookeeper)")
    server = start_zk(tmp_path_factory.mktemp("zk"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local SparkSession for the whole run (local[2], UTC, kaudit's conf, a small run's JVM:
    the tests' tables hold a few rows each)."""
    from pipelines.spark.session import get_spark

    catalog_dir = tmp_path_factory.mktemp("spark-warehouse")
    session = get_spark("local[2]", app_name="kaudit-tests", conf={"spark.sql.warehouse.dir": str(catalog_dir)},
                        small=True)
    yield session
    session.stop()


@pytest.fixture()
def warehouse(tmp_path):
    from pipelines.warehouse import Warehouse

    return Warehouse(tmp_path / "warehouse")


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    return REAL_FIXTURES
