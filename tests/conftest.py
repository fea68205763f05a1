"""Session-scoped real components: a ZooKeeper 3.8 server and a local SparkSession."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.zk_server import ZK_HOME, start_zk

REPO = Path(__file__).resolve().parents[1]
# Files written by real ZooKeeper servers and Kafka clusters, copied in with their sources
# and licences (their README files)
REAL_FIXTURES = REPO / "tests" / "fixtures" / "real"


# How the suite shares two cores (pytest-xdist, ``--dist loadgroup``: a group runs on one
# worker). Tests that use the demo's run share one worker, so the demo is built once, not once
# per worker; tests that start a Spark standalone cluster or a Thrift Server (``cluster``) run
# one at a time on one worker, as two such JVM estates at once on two cores only slow each
# other; the tests of a module with a module-scoped fixture stay together, so the fixture is
# built once. Every other test goes to whichever worker is free.
SHARED_FIXTURES = ("demo_run",)
SERIAL_MARKERS = ("cluster",)


def _group(item) -> str | None:
    shared = next((f for f in SHARED_FIXTURES if f in item.fixturenames), None)
    if shared is not None:
        return shared
    if any(item.get_closest_marker(m) for m in SERIAL_MARKERS):
        return "cluster"
    fixtures = getattr(item, "_fixtureinfo", None)
    defs = fixtures.name2fixturedefs.values() if fixtures is not None else ()
    if any(d.scope in ("module", "class", "package") for ds in defs for d in ds):
        return item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's, which names each test's group from these marks
def pytest_collection_modifyitems(items):
    for item in items:
        group = _group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


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
    the tests' tables hold a few rows each), with Iceberg's jars and SQL extensions when they are
    fetched (`make iceberg-jars`): a test on an Iceberg warehouse binds the catalog `kaudit` to
    its own (``pipelines.warehouse.iceberg.catalog.bind_catalog``). Its planning and code
    generation are a small run's (``size_to_run``), as kaudit sizes a session for a run of a few
    rows: interpreted operators, one shuffle partition coalesced in place, no adaptive execution
    (not Spark's defaults: 200 partitions, whole-stage code for every query new to the JVM); a
    run a test builds sizes it for itself
    (``RunContext.spark``), a test that sizes it otherwise restores it."""
    from pipelines.spark.session import get_spark, size_to_run
    from pipelines.warehouse.iceberg import jars
    from pipelines.warehouse.iceberg.catalog import CatalogConfig

    catalog_dir = tmp_path_factory.mktemp("spark-warehouse")
    conf = {"spark.sql.warehouse.dir": str(catalog_dir)}
    try:
        iceberg = CatalogConfig.for_warehouse(catalog_dir).spark_conf(jars.paths())
        conf.update({k: iceberg[k] for k in ("spark.jars", "spark.sql.extensions")})
    except jars.JarsMissing:
        pass
    session = get_spark("local[2]", app_name="kaudit-tests", conf=conf, small=True)
    size_to_run(session, 0)
    yield session
    session.stop()


@pytest.fixture()
def warehouse(tmp_path):
    from pipelines.warehouse.warehouse import open_warehouse

    return open_warehouse(tmp_path / "warehouse")


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    return REAL_FIXTURES
