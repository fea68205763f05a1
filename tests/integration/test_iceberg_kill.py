"""kill -9 of an extract step writing to an Iceberg warehouse, on the local disk and on a real S3
server (S3Proxy on loopback): what it committed before the kill is not visible (no ledger row
names it), and running the step again gives the tables a run that was never killed gives. The
oracle is that clean run, in a warehouse of its own (on the same store).

The kill lands where it matters most: the test watches the catalog (the SQLite file, read with
sqlite3) and kills the moment a raw table has been committed while the step's ledger row has
not, the window between a step's table commits and its publication; then at fixed fractions
of a clean run's wall time.

Besides kaudit's reader (which reads at the ledger's snapshots), each table is read as an
engine that knows nothing of the ledger reads it: its current state (``main``), through
pyiceberg's plain ``scan()`` and Spark SQL without ``VERSION AS OF``. A step writes on a branch
of its own and moves ``main`` only after its ledger row (pipelines/warehouse/iceberg/publish.py),
so after a kill each table's current state is one a ledger row names, and after the re-run it
is the ledger's."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.warehouse.iceberg import publish, schemas
from pipelines.warehouse.tables import RAW
from pipelines.warehouse.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

REPO = Path(__file__).resolve().parents[2]
LOGS = REPO / "pipelines" / "demo" / "data" / "kafka-logs"
RUN = "kill-1"
STEP = "extract_offsets"


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path, monkeypatch):
    """Where the tables' files go: None (the warehouse directory), or an ``s3a://`` prefix of a
    bucket on S3Proxy, whose settings this process's environment (and so each step's) holds."""
    if request.param == "local":
        yield None
        return
    from testkit.storage import S3Proxy

    with S3Proxy(tmp_path / "s3").start() as s3:
        s3.create_bucket("kaudit")
        for key, value in s3.env().items():
            monkeypatch.setenv(key, value)
        yield "s3a://kaudit"


def _location(root: Path, store: str | None) -> str | None:
    return None if store is None else f"{store}/{root.parent.name}"


def _warehouse(root: Path, store: str | None) -> Warehouse:
    return Warehouse(root, location=_location(root, store), catalog=str(_catalog(root)))


def _catalog(root: Path) -> Path:
    return root.with_name(root.name + ".catalog.db")


def _command(root: Path, store: str | None) -> list[str]:
    where = ["--warehouse", str(root)] if store is None else \
        ["--warehouse", _location(root, store), "--warehouse-local", str(root), "--catalog", str(_catalog(root))]
    return [sys.executable, "-m", "pipelines", "--quiet", *where,
            "--run-id", RUN, "extract", "offsets", str(LOGS)]


def _run(root: Path, store: str | None) -> float:
    start = time.monotonic()
    done = subprocess.run(_command(root, store), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - start


def _catalog_state(db: Path) -> tuple[set[str], bool]:
    """(raw tables with a committed metadata file, the ledger table exists), read with sqlite3."""
    if not db.is_file():
        return set(), False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05) as con:
            rows = con.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables").fetchall()
    except sqlite3.Error:
        return set(), False
    raw = {f"{ns}/{name}" for ns, name, loc in rows if ns == "raw" and loc}
    return raw, any(ns == "meta" and name == "commits" for ns, name, _ in rows)


def kill_when(command: list[str], now, **popen) -> bool:
    """Starts ``command`` (``popen``: more of ``subprocess.Popen``'s arguments) and kills it
    with SIGKILL the moment ``now()`` is true, polling every 5 ms. True if it was killed so,
    False if it finished first."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **popen)
    try:
        while proc.poll() is None:
            if now():
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                return True
            time.sleep(0.005)
        return False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _kill_between_commits(root: Path, store: str | None) -> bool:
    """Starts the step; kills it once a raw table is in the catalog and the ledger is not.
    True if it was killed in that window, False if the step finished first."""
    db = _catalog(root)

    def window() -> bool:
        raw, ledger = _catalog_state(db)
        return bool(raw) and not ledger

    return kill_when(_command(root, store), window)


def _kill_after(root: Path, store: str | None, seconds: float) -> None:
    proc = subprocess.Popen(_command(root, store), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def _tables(wh: Warehouse) -> dict[str, list[str]]:
    return {t: sorted(repr(r) for r in wh.read_arrow(t, RUN).to_pylist()) for t in RAW if wh.exists(t, RUN)}


def _rows(table: str, data) -> list[str]:
    return sorted(repr(r) for r in schemas.to_declared(table, data).to_pylist())


def _current(wh: Warehouse, tables) -> dict[str, list[str]]:
    """The run's rows of each table that has any, read at its current state (``main``) with
    pyiceberg's plain ``scan()``: what an engine that ignores the ledger sees."""
    out = {}
    for t in tables:
        if wh.catalog.table_exists(wh.ident(t)):
            data = wh.catalog.load_table(wh.ident(t)).scan(row_filter=f"run_id = '{RUN}'").to_arrow()
            if data.num_rows:
                out[t] = _rows(t, data)
    return out


def _nonempty(tables: dict[str, list[str]]) -> dict[str, list[str]]:
    return {t: rows for t, rows in tables.items() if rows}


def _branches(wh: Warehouse, tables) -> list[str]:
    """kaudit's branches left on ``tables`` (none once every step is published or abandoned)."""
    return sorted(f"{t}:{name}" for t in tables if wh.catalog.table_exists(wh.ident(t))
                  for name in wh.catalog.load_table(wh.ident(t)).metadata.refs if name.startswith(publish.PREFIX))


def test_killed_extract_leaves_nothing_visible_and_a_rerun_gives_the_same_tables(tmp_path, store):
    clean_root = tmp_path / "clean" / "wh"
    wall = _run(clean_root, store)
    clean = _tables(_warehouse(clean_root, store))
    assert clean.get("raw/offset_commits"), "the clean run committed no offset commits"

    root = tmp_path / "killed" / "wh"
    killed_in_window = _kill_between_commits(root, store)
    wh = _warehouse(root, store)
    if killed_in_window:
        # tables committed, the ledger not: none of the step's tables is visible, by the
        # ledger or on any table's main
        assert wh.snapshots(RUN) == {}
        assert not any(wh.exists(t, RUN) for t in RAW)
        assert _current(wh, RAW) == {}
    for fraction in (0.2, 0.5, 0.8):
        before = _nonempty(_tables(_warehouse(root, store)))
        _kill_after(root, store, wall * fraction)
        wh = _warehouse(root, store)
        visible = _tables(wh)
        assert visible in ({}, clean), f"killed at {fraction:.0%} of {wall:.1f} s: a partial step is visible"
        # main of each table: the state before the kill or the clean one, never a partial one
        # (between the ledger row and the last table's fast-forward some tables can be new and
        # others not yet)
        current = _current(wh, RAW)
        for t in RAW:
            assert current.get(t) in (before.get(t), _nonempty(clean).get(t)), f"{t} at {fraction:.0%}"
    _run(root, store)
    wh = _warehouse(root, store)
    assert _tables(wh) == clean
    assert _current(wh, RAW) == _nonempty(clean)  # main is the ledger's state
    assert _branches(wh, RAW) == []
    if store is not None:  # the tables' files are on S3, none on the local disk
        assert not list(root.rglob("*.parquet")), "table data on the local disk"
    print(f"\n{store or 'local disk'}: clean run {wall:.1f} s; killed between table commits and the ledger: "
          f"{killed_in_window}")


def _metadata(db: Path) -> dict[tuple[str, str], str]:
    """(namespace, table) -> the metadata file the catalog names now, read with sqlite3."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
        return {(ns, name): loc for ns, name, loc in
                con.execute("SELECT table_namespace, table_name, metadata_location FROM iceberg_tables")}


def _core(wh: Warehouse) -> dict[str, list[str]]:
    from pipelines.warehouse.tables import SCHEMAS

    return {t: sorted(repr(r) for r in wh.read_arrow(t, RUN).to_pylist())
            for t in SCHEMAS if t.startswith("core/") and wh.exists(t, RUN)}


def _spark_current(spark, wh: Warehouse, tables) -> dict[str, list[str]]:
    """As :func:`_current`, read by Spark SQL without ``VERSION AS OF`` (the catalog ``kaudit``)."""
    out = {}
    for t in tables:
        data = spark.sql(f"SELECT * FROM {wh.spark_identifier(t)} WHERE run_id = '{RUN}'").toArrow()
        if data.num_rows:
            out[t] = _rows(t, data)
    return out


def _sdk_settings(spark) -> None:
    """The test session's JVM started before this test put the S3 server's settings in the
    environment: the AWS SDK's checksum settings (which S3Proxy needs) go to it as the system
    properties the SDK reads as well as the environment."""
    for var, prop in (("AWS_REQUEST_CHECKSUM_CALCULATION", "aws.requestChecksumCalculation"),
                      ("AWS_RESPONSE_CHECKSUM_VALIDATION", "aws.responseChecksumValidation")):
        if os.environ.get(var):
            spark._jvm.java.lang.System.setProperty(prop, os.environ[var])


def _written_on_branch(wh: Warehouse, tables) -> list[str]:
    """Core tables whose build branch has moved past main: the build's writes."""
    name = publish.branch(RUN, "build_core")
    out = []
    for t in tables:
        refs = wh.catalog.load_table(wh.ident(t)).metadata.refs
        if name in refs and refs[name].snapshot_id != refs["main"].snapshot_id:
            out.append(t)
    return out


def test_killed_build_on_s3_leaves_the_last_build_visible_and_a_rerun_gives_the_same_tables(
        tmp_path, monkeypatch, spark):
    """The Spark build writes each core table on its branch as it writes it (the step's staging
    until its ledger row): a build killed -9 (the process group: Python and Spark's JVM) once it
    has written a core table on S3, before its ledger row, leaves every table as the build
    before it left them, by the ledger and on main (Spark SQL and pyiceberg reading the current
    state), and building again gives those tables, main at the ledger's snapshots."""
    from pipelines.warehouse.iceberg.catalog import bind_catalog
    from testkit.storage import S3Proxy

    demo = REPO / "pipelines" / "demo" / "data"
    with S3Proxy(tmp_path / "s3").start() as s3:
        s3.create_bucket("kaudit")
        for key, value in s3.env().items():
            monkeypatch.setenv(key, value)
        root, db = tmp_path / "wh", tmp_path / "catalog.db"
        base = [sys.executable, "-m", "pipelines", "--quiet", "--warehouse", "s3a://kaudit/wh", "--warehouse-local",
                str(root), "--catalog", str(db), "--run-id", RUN]
        build = [*base, "--spark-master", "local[2]", "build", "--skip-dbt"]
        for args in (["extract", "zk-snapshot", str(demo / "zookeeper")], ["extract", "offsets", str(LOGS)],
                     ["extract", "log-end", str(LOGS)], ["build", "--skip-dbt"]):
            done = subprocess.run([*base, *args], capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stderr[-3000:]
        wh = Warehouse(root, location="s3a://kaudit/wh", catalog=str(db))
        built = _core(wh)
        assert built.get("core/assignment_audit"), "the first build audited nothing"
        ledger_rows = wh.snapshots(RUN)

        before = _metadata(db)
        watch = Warehouse(root, location="s3a://kaudit/wh", catalog=str(db))
        proc = subprocess.Popen(build, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        killed = None
        try:
            while proc.poll() is None and killed is None:
                now = _metadata(db)
                moved = sorted(f"{ns}/{t}" for (ns, t), loc in now.items()
                               if ns == "core" and before.get((ns, t)) != loc)
                if moved and now[("meta", "commits")] == before[("meta", "commits")]:
                    written = _written_on_branch(watch, moved)
                    if written:
                        os.killpg(proc.pid, signal.SIGKILL)
                        killed = written
                time.sleep(0.01)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert killed, "the build finished before any core table was committed: no kill in the window"
        wh = Warehouse(root, location="s3a://kaudit/wh", catalog=str(db))
        assert wh.snapshots(RUN) == ledger_rows  # no ledger row of the killed build
        assert _core(wh) == built, "the killed build's commits are visible"
        core = sorted(built)
        assert _current(wh, core) == _nonempty(built), "the killed build's writes are on main"
        _sdk_settings(spark)
        bind_catalog(spark, wh.catalog_config)
        assert _spark_current(spark, wh, core) == _nonempty(built), "Spark SQL sees the killed build's writes"
        assert _branches(wh, core), "the killed build left no branch: the kill missed its writes"
        done = subprocess.run(build, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        wh = Warehouse(root, location="s3a://kaudit/wh", catalog=str(db))
        assert _core(wh) == built
        assert wh.snapshots(RUN) != ledger_rows  # the re-run recorded its own snapshots
        assert _current(wh, core) == _nonempty(built) == _spark_current(spark, wh, core)
        assert all(wh.catalog.load_table(wh.ident(t)).metadata.refs["main"].snapshot_id == wh.snapshot_id(t, RUN)
                   for t in core)  # main is at the snapshot the ledger names
        assert _branches(wh, core) == []
    print(f"\nkilled after writing {killed} on its branch; {len(built)} core tables, "
          f"{sum(len(r) for r in built.values())} rows equal after the re-run")
