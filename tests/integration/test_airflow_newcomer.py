"""Airflow as a newcomer meets it: a fresh Airflow home, the shipped ``examples/audit.yaml`` (a
verbatim copy, pointed at a demo cluster by its own ``KAUDIT_DEMO`` variable) and no
``kaudit_spark`` connection. ``airflow dags test kaudit_audit DATE`` runs every task to the
report: the Spark steps use the config's master (local) instead of the provider's ``yarn``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
AIRFLOW = REPO / ".venv-airflow" / "bin" / "airflow"
RUN_ID = "20240501T000000Z"


def test_dags_test_with_the_shipped_example_and_no_connection_reaches_the_report(tmp_path):
    from pipelines.demo import write_cluster

    if not AIRFLOW.exists():
        pytest.fail("Airflow is not installed: run `make airflow-venv` (make test does)")
    home = tmp_path / "airflow-home"
    demo = write_cluster(tmp_path / "demo-out")
    config = tmp_path / "examples" / "audit.yaml"
    config.parent.mkdir()
    shutil.copyfile(REPO / "examples" / "audit.yaml", config)  # its warehouse: ../warehouse from here
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK", "SPARK_", "VIRTUAL_ENV"))}
    env.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "airflow" / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "KAUDIT_HOME": str(REPO),
        "KAUDIT_CONFIG": str(config),
        "KAUDIT_DEMO": str(demo),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": f"{AIRFLOW.parent}:{os.environ.get('PATH', '')}",
    })
    migrate = subprocess.run([str(AIRFLOW), "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    connections = subprocess.run([str(AIRFLOW), "connections", "get", "kaudit_spark"], env=env,
                                 capture_output=True, text=True, timeout=300)
    assert connections.returncode != 0  # the fresh home has no such connection

    done = subprocess.run([str(AIRFLOW), "dags", "test", "kaudit_audit", "2024-05-01"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=2000)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    assert "no Airflow connection 'kaudit_spark'" in log
    assert "--master yarn" not in log and "No tasks to run" not in log

    warehouse = tmp_path / "warehouse"
    summary = json.loads((warehouse / "reports" / f"run_id={RUN_ID}" / "summary.json").read_text())
    assert summary["run_id"] == RUN_ID and summary["inputs"]["znodes"] > 0
    assert summary["inputs"]["offset_records"] > 0
    assert sum(summary["assignment"]["zookeeper"].values()) > 0
    assert (warehouse / "reports" / f"run_id={RUN_ID}" / "index.html").is_file()
    for table in ("core/assignment_audit", "marts/consumer_lag"):
        assert list((warehouse / table / f"run_id={RUN_ID}").glob("*.parquet")), table
