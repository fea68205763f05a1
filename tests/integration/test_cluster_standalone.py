"""Cluster mode on a real Spark standalone cluster (master + one worker from the pyspark wheel,
on 127.0.0.1) with the warehouse on a real S3 server (S3Proxy on loopback) as Iceberg tables:
``kaudit --spark-master spark://... --warehouse s3a://... build`` spark-submits
``pipelines/jobs/build_core.py`` then ``pipelines/jobs/dbt_build.py``, and ``validate``
``pipelines/jobs/validate.py``, each with the package as ``--py-files``, Iceberg's jars and the S3
settings as spark-submit's own settings. They give exactly the core tables, the marts and the
validation's results that the local, in-process steps of the session's ``demo_run`` (the demo
cluster's run, a local warehouse) give on the same raw rows, copied into the S3 warehouse first.

The worker shares no mount with the driver: it runs in a mount namespace of its own in which
an empty file system hides the test session's temporary directory (the driver's local
directory and catalog, the demo's warehouse), with its own working directory outside it and
none of the S3 settings in its environment; S3 is the only store the driver and the executors
have in common."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from testkit.servers import stop_group

pytestmark = [pytest.mark.integration, pytest.mark.cluster, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
KAUDIT = Path(sys.executable).with_name("kaudit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _daemon(cls: str, args: list[str], log: Path, env: dict, hide: Path | None = None) -> subprocess.Popen:
    """``spark-class cls args``; with ``hide``, in a mount namespace of its own (a user namespace
    too, so no privilege is needed) where an empty tmpfs is mounted over ``hide``: it fails to
    start if a marker file under ``hide`` is still visible."""
    cmd = [str(_spark_home() / "bin" / "spark-class"), cls, *args]
    if hide is not None:
        marker = hide / MARKER
        marker.touch()
        cmd = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "sh", "-c",
               f'mount -t tmpfs none "{hide}" && test ! -e "{marker}" && exec "$@"', "sh", *cmd]
    return subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


MARKER = "driver-only-marker"


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[1]} exited {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"no {text!r} in {log} after {timeout}s")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A Spark standalone master and one worker (1 core, 1g) on 127.0.0.1; torn down after. The
    worker runs with the test session's temporary directory hidden (see the module), its logs
    and working directory outside it, and an environment without the S3 settings."""
    root = tmp_path_factory.mktemp("spark-standalone")
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(root),
        "SPARK_WORKER_DIR": str(root / "work"),
        # no REST submission server: it would take the fixed port 6066
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    url = f"spark://127.0.0.1:{port}"
    master = _daemon(
        "org.apache.spark.deploy.master.Master",
        ["--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
        root / "master.log",
        env,
    )
    worker = None
    own = Path(tempfile.mkdtemp(prefix="kaudit-worker-"))  # outside the hidden directory
    try:
        _wait_for(root / "master.log", "New state: ALIVE", master, 240)
        worker = _daemon(
            "org.apache.spark.deploy.worker.Worker",
            [url, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0"],
            own / "worker.log",
            {**env, "SPARK_LOG_DIR": str(own), "SPARK_WORKER_DIR": str(own / "work"), "HOME": str(own)},
            hide=tmp_path_factory.getbasetemp(),
        )
        _wait_for(own / "worker.log", "Successfully registered with master", worker, 240)
        yield {"url": url, "master_log": root / "master.log", "env": env, "worker_dir": own / "work"}
    finally:
        if worker is not None:
            stop_group(worker)
        stop_group(master)
        shutil.rmtree(own, ignore_errors=True)


LOCATION = "s3a://kaudit/warehouse"
RUN = "cluster"


@pytest.fixture(scope="module")
def s3_warehouse(tmp_path_factory, demo_run):
    """The raw tables of the demo's ZooKeeper-cluster run (``demo_run``, built locally) copied
    into run ``cluster`` of an Iceberg warehouse on a real S3 server (S3Proxy on loopback, the
    S3 settings in this process's environment, as a user's shell has them)."""
    from pipelines.warehouse.warehouse import Warehouse
    from testkit.storage import S3Proxy

    assert demo_run.exit_code == 0, demo_run.output[-3000:]
    root = tmp_path_factory.mktemp("cluster-s3")
    with S3Proxy(root / "s3").start() as s3, pytest.MonkeyPatch.context() as env:
        for key, value in s3.env().items():
            env.setenv(key, value)
        s3.create_bucket("kaudit")
        catalog = str(root / "catalog.db")
        local = root / "local"
        wh = Warehouse(local, location=LOCATION, catalog=catalog)
        assert copy_raw(Warehouse(demo_run.warehouse), demo_run.run_id, wh) > 0
        yield {"wh": wh, "s3": s3, "local": local, "catalog": catalog}


def copy_raw(source, source_run: str, wh) -> int:
    """The raw tables of ``source``'s run ``source_run`` committed as run ``cluster`` of ``wh``
    (the quarantine's rows of the extracts, not those the build writes itself): rows copied."""
    from pipelines.warehouse.reading import read_arrow
    from pipelines.warehouse.tables import SCHEMAS

    copied = 0
    with wh.transaction(RUN, step="copy") as tx:
        for table in sorted(t for t in SCHEMAS if t.startswith("raw/") and t != "raw/quarantine"):
            if source.exists(table, source_run):
                data = read_arrow(source, table, source_run, with_run_id=False)
                tx.write(table, data)
                copied += data.num_rows
        later = ("build_core", "dbt", "validate", "report")  # the steps the test runs on the cluster
        extracts = sorted({step for step, table in source.snapshots(source_run)
                           if table == "raw/quarantine" and step not in later})
        for step in extracts:
            data = source.read_step("raw/quarantine", source_run, step)
            tx.write("raw/quarantine", data.select(SCHEMAS["raw/quarantine"].names))
            copied += data.num_rows
        assert extracts, "the demo's run has no extract's quarantine rows"
    return copied


def _core_tables() -> list[str]:
    from pipelines.warehouse.tables import SCHEMAS

    return sorted(t for t in SCHEMAS if t.startswith("core/"))


def _rows(table) -> list[str]:
    return sorted(repr(r) for r in table.to_pylist())


def _on_cluster(s3_warehouse, standalone, step: list[str], jobs: tuple[str, ...]) -> float:
    """``kaudit <step...>`` of run ``cluster`` submitted to the standalone cluster: its seconds."""
    wh = s3_warehouse["wh"]
    started = time.monotonic()
    proc = subprocess.run(
        [str(KAUDIT), "--warehouse", LOCATION, "--warehouse-local", str(s3_warehouse["local"]),
         "--catalog", s3_warehouse["catalog"], "--run-id", RUN, "--spark-master", standalone["url"], *step],
        cwd=REPO, capture_output=True, text=True, timeout=1200, check=False,
    )
    logs = [wh.meta_path(RUN, f"spark-{job}").with_suffix(".log") for job in jobs]
    tails = "\n".join(f.read_text(errors="replace")[-4000:] for f in logs if f.exists())
    assert proc.returncode == 0, f"{proc.stderr}\n{tails}"
    for job in jobs:
        assert f"{job}: done on {standalone['url']}" in proc.stderr, proc.stderr
    return time.monotonic() - started


# the default suite runs the core build on the cluster; dbt and validate there too (about 4 more
# minutes on the one-core worker) run in `make matrix`
@pytest.mark.parametrize("with_dbt", [False, pytest.param(True, marks=pytest.mark.matrix)], ids=["core", "dbt"])
def test_cluster_steps_on_s3_equal_local_steps(s3_warehouse, standalone, demo_run, with_dbt):

    from pipelines.warehouse.reading import read_arrow
    from pipelines.warehouse.tables import SCHEMAS
    from pipelines.warehouse.warehouse import Warehouse

    wh, s3, local = s3_warehouse["wh"], s3_warehouse["s3"], s3_warehouse["local"]
    before = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
    if with_dbt:
        took = _on_cluster(s3_warehouse, standalone, ["build"], ("build_core", "dbt_build"))
        took_validate = _on_cluster(s3_warehouse, standalone, ["validate"], ("validate",))
    else:
        took = _on_cluster(s3_warehouse, standalone, ["build", "--skip-dbt"], ("build_core",))
    log = wh.meta_path(RUN, "spark-build_core").with_suffix(".log")
    # it ran on the cluster: the master registered the app and gave it the worker's executor,
    # which ran the build's tasks (its own log, in the worker's directory)
    master_log = standalone["master_log"].read_text(errors="replace")
    assert "Registering app" in master_log and "Launching executor" in master_log
    driver_log = log.read_text(errors="replace")
    assert "pipelines-" in driver_log  # the shipped --py-files zip
    executor_logs = list(standalone["worker_dir"].glob("app-*/*/stderr"))
    assert any("Finished task" in f.read_text(errors="replace") for f in executor_logs), executor_logs
    # the tables' files went to S3; on the driver's disk only run records and the run's documents
    # (the validation's failing rows), no table data
    keys = s3.objects("kaudit")
    assert any(k.startswith("warehouse/core/assignment_audit/data/") for k in keys), keys[:20]
    after = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
    assert not [p for p in after if p.suffix == ".parquet" and p.parts[0] != "validation"], after

    local_wh = Warehouse(demo_run.warehouse)
    compared: dict[str, int] = {}
    for table in _core_tables():
        want = read_arrow(local_wh, table, demo_run.run_id, with_run_id=False)
        with pytest.MonkeyPatch.context() as env:
            for key, value in s3.env().items():
                env.setenv(key, value)
            got = wh.read_arrow(table, RUN)
            assert wh.exists(table, RUN), f"{table}: not committed by the cluster's build"
        assert got.schema == SCHEMAS[table], table
        assert got.num_rows == want.num_rows, f"{table}: {got.num_rows} rows on S3, {want.num_rows} locally"
        assert _rows(got) == _rows(want), f"{table}: rows differ"
        compared[table] = want.num_rows
    # the build's own quarantine rows (the local run's shared table keeps them in the build's partition)
    want = local_wh.read_step("raw/quarantine", demo_run.run_id, "build_core")
    with pytest.MonkeyPatch.context() as env:
        for key, value in s3.env().items():
            env.setenv(key, value)
        got = wh.read_step("raw/quarantine", RUN, "build_core")
    assert _rows(got.select(want.column_names)) == _rows(want)
    compared["raw/quarantine"] = want.num_rows
    assert compared["core/assignment_audit"] > 0 and sum(compared.values()) > compared["core/assignment_audit"]
    if not with_dbt:
        print(f"\n{len(compared)} tables, {sum(compared.values())} rows equal row for row (cluster build on S3 "
              f"{took:.0f} s); {len(keys)} objects on S3; driver's local files: {len(before)} before, "
              f"{len(after)} after")
        return

    # dbt's marts, built by the cluster's driver and executors, row for row (but the run's id)
    local_marts = sorted({t for (_, t) in local_wh.snapshots(demo_run.run_id) if t.startswith("marts/")})
    assert len(local_marts) >= 20, local_marts
    with pytest.MonkeyPatch.context() as env:
        for key, value in s3.env().items():
            env.setenv(key, value)
        for table in local_marts:
            want = read_arrow(local_wh, table, demo_run.run_id, with_run_id=False)
            assert wh.exists(table, RUN), f"{table}: not committed by the cluster's dbt build"
            got = read_arrow(wh, table, RUN, with_run_id=False)
            assert got.column_names == want.column_names, table
            assert _rows(got) == _rows(want), f"{table}: rows differ"
            compared[table] = want.num_rows
        # the validation's checks and their outcomes (each check's counts as Great Expectations gave them)
        checked = ("suite", "expectation", "level", "success", "element_count", "unexpected_count", "no_data")
        got = wh.read_arrow("quality/validation_results", RUN, columns=list(checked))
    want = local_wh.read_arrow("quality/validation_results", demo_run.run_id, columns=list(checked))
    assert want.num_rows > 0 and _rows(got) == _rows(want)
    compared["quality/validation_results"] = want.num_rows
    assert any(k.startswith("warehouse/marts/consumer_lag/data/") for k in keys), keys[:20]
    print(f"\n{len(compared)} tables ({len(local_marts)} marts), {sum(compared.values())} rows equal row "
          f"for row (cluster build with dbt on S3 {took:.0f} s, validate {took_validate:.0f} s); {len(keys)} "
          f"objects on S3; driver's local files: {len(before)} before, {len(after)} after")


def test_local_checkpoints_survive_an_executor_loss_on_a_cluster(standalone, tmp_path):
    """On a cluster kaudit's local checkpoints (``io.reused``, the validation's views) keep two
    copies of each block: an executor killed between two actions over a checkpointed frame loses
    no block, and the second action gives the same rows. With one copy (Spark's default, which
    kaudit keeps in local mode) the same loss fails the action: the test shows that it does."""
    env = {**standalone["env"], "SPARK_WORKER_DIR": str(tmp_path / "work2")}
    worker = _daemon(
        "org.apache.spark.deploy.worker.Worker",
        [standalone["url"], "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0"],
        tmp_path / "worker2.log",
        env,
    )
    try:
        _wait_for(tmp_path / "worker2.log", "Successfully registered with master", worker, 240)
        proc = subprocess.run(
            [sys.executable, str(HERE / "executor_loss.py"), standalone["url"]], cwd=tmp_path, capture_output=True,
            text=True, timeout=900, check=False, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )
    finally:
        stop_group(worker)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    kaudit, one_copy = result["kaudit"], result["one_copy"]
    assert sum(n for _, n in kaudit["before"]) == 200000
    assert kaudit.get("after") == kaudit["before"], kaudit.get("error")
    assert "after" not in one_copy and "Checkpoint block" in one_copy["error"], one_copy
