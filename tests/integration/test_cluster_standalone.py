"""Cluster mode on a real Spark standalone cluster (master + one worker from the pyspark wheel,
on 127.0.0.1): ``kaudit --spark-master spark://... build --skip-dbt`` spark-submits
``pipelines/jobs/build_core.py`` with the package as ``--py-files`` and gives exactly the core
tables that the local, in-process build gives on the same raw inputs: the demo cluster's run of
the session's ``demo_run`` (extracted and built locally by ``kaudit demo``), whose raw tables
are copied into a warehouse of their own for the cluster's build."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def _daemon(cls: str, args: list[str], log: Path, env: dict) -> subprocess.Popen:
    cmd = [str(_spark_home() / "bin" / "spark-class"), cls, *args]
    return subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[1]} exited {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"no {text!r} in {log} after {timeout}s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """A Spark standalone master and one worker (1 core, 1g) on 127.0.0.1; torn down after."""
    root = tmp_path_factory.mktemp("spark-standalone")
    port = _free_port()
    env = {
        **os.environ,
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
    try:
        _wait_for(root / "master.log", "New state: ALIVE", master, 240)
        worker = _daemon(
            "org.apache.spark.deploy.worker.Worker",
            [url, "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", "0"],
            root / "worker.log",
            env,
        )
        _wait_for(root / "worker.log", "Successfully registered with master", worker, 240)
        yield {"url": url, "master_log": root / "master.log", "env": env}
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


@pytest.fixture(scope="module")
def demo_raw(tmp_path_factory, demo_run):
    """The raw tables of the demo's ZooKeeper-cluster run (``demo_run``, built locally) copied
    into the run ``cluster`` of a warehouse of their own."""
    from pipelines.warehouse.directory import Warehouse

    assert demo_run.exit_code == 0, demo_run.output[-3000:]
    wh = Warehouse(tmp_path_factory.mktemp("cluster-demo") / "warehouse")
    for table_dir in (demo_run.warehouse / "raw").iterdir():
        src = table_dir / f"run_id={demo_run.run_id}"
        if src.is_dir():
            shutil.copytree(src, wh.root / "raw" / table_dir.name / "run_id=cluster")
    return wh


def _core_tables() -> list[str]:
    from pipelines.warehouse.tables import SCHEMAS

    return sorted(t for t in SCHEMAS if t.startswith("core/"))


def test_cluster_build_equals_local_build(demo_raw, standalone, demo_run, spark):
    from pyspark.testing import assertDataFrameEqual

    from pipelines.warehouse.directory import Warehouse

    wh, local_wh, local_run = demo_raw, Warehouse(demo_run.warehouse), demo_run.run_id
    proc = subprocess.run(
        [str(KAUDIT), "--warehouse", str(wh.root), "--run-id", "cluster", "--spark-master", standalone["url"],
         "build", "--skip-dbt"],
        cwd=REPO, capture_output=True, text=True, timeout=1200, check=False,
    )
    log = wh.meta_path("cluster", "spark-build_core").with_suffix(".log")
    assert proc.returncode == 0, f"{proc.stderr}\n{log.read_text(errors='replace')[-4000:] if log.exists() else ''}"
    assert f"build_core: done on {standalone['url']}" in proc.stderr
    # it ran on the cluster: the master registered the app and gave it the worker's executor
    master_log = standalone["master_log"].read_text(errors="replace")
    assert "Registering app" in master_log and "Launching executor" in master_log
    assert "pipelines-" in log.read_text(errors="replace")  # the shipped --py-files zip

    total = 0
    for table in [*_core_tables(), "raw/quarantine"]:
        local_files = sorted(local_wh.partition_dir(table, local_run).glob("*.parquet"))
        cluster_files = sorted(wh.partition_dir(table, "cluster").glob("*.parquet"))
        assert local_files, f"{table}: no local partition"
        assert cluster_files, f"{table}: no cluster partition"
        local = spark.read.parquet(*[str(f) for f in local_files])
        cluster = spark.read.parquet(*[str(f) for f in cluster_files])
        assert cluster.schema == local.schema, table
        assertDataFrameEqual(cluster, local)
        total += local.count()
    audit = spark.read.parquet(str(local_wh.partition_dir("core/assignment_audit", local_run)))
    assert audit.count() > 0 and total > audit.count()  # the demo's audit is not empty: a real comparison


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
        _stop(worker)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    kaudit, one_copy = result["kaudit"], result["one_copy"]
    assert sum(n for _, n in kaudit["before"]) == 200000
    assert kaudit.get("after") == kaudit["before"], kaudit.get("error")
    assert "after" not in one_copy and "Checkpoint block" in one_copy["error"], one_copy
