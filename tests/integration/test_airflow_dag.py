"""The Airflow DAG in a real Airflow 3 (its own venv, ``make airflow-venv``): it loads with no
import errors, and ``dag.test()`` runs the whole chain on the demo cluster with local Spark
(spark-submit through the Apache Spark provider's hook, master from an Airflow connection);
every task succeeds and the run's tables, validation results and report exist."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2700)]

REPO = Path(__file__).resolve().parents[2]
AIRFLOW_PY = REPO / ".venv-airflow" / "bin" / "python"
RUN_ID = "20240501T000000Z"  # the logical date below

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from datetime import datetime, timezone

    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=sys.argv[1])
    dag = bag.dags.get("kaudit_audit")
    out = {"import_errors": {k: str(v)[-500:] for k, v in bag.import_errors.items()},
           "tags": sorted(dag.tags) if dag else [],
           "retries": dag.default_args.get("retries") if dag else None}
    if dag is not None:
        run = dag.test(logical_date=datetime(2024, 5, 1, tzinfo=timezone.utc), run_conf={"config": sys.argv[2]})
        from airflow.utils.session import create_session
        from airflow.models import TaskInstance
        with create_session() as session:
            tis = session.query(TaskInstance).filter(TaskInstance.run_id == run.run_id).all()
            out["state"] = str(run.state)
            out["tasks"] = sorted([ti.task_id, ti.map_index, str(ti.state)] for ti in tis)
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory):
    if not AIRFLOW_PY.exists():
        pytest.fail("Airflow is not installed: run `make airflow-venv` (make test does)")
    home = tmp_path_factory.mktemp("airflow-home")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYSPARK", "SPARK_", "VIRTUAL_ENV"))
    }
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "airflow" / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "KAUDIT_HOME": str(REPO),
            # the Spark connection the DAG's spark-submit tasks use: local Spark, 2 threads
            "AIRFLOW_CONN_KAUDIT_SPARK": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PATH": f"{REPO / '.venv-airflow' / 'bin'}:{os.environ.get('PATH', '')}",
        }
    )
    migrate = subprocess.run(
        [str(AIRFLOW_PY), "-m", "airflow", "db", "migrate"], env=env, capture_output=True, text=True, timeout=600
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    return home, env


LOAD_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    started = time.monotonic()
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=sys.argv[1])
    dag = bag.dags["kaudit_audit"]
    heavy = sorted(m for m in ("pyspark", "pipelines", "pandas", "pyarrow", "dbt", "great_expectations")
                   if m in sys.modules)
    print("RESULT " + json.dumps({
        "import_errors": {k: str(v)[-500:] for k, v in bag.import_errors.items()},
        "heavy": heavy,
        "upstream": {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks},
        "params": sorted(dag.params.keys()),
        "tags": sorted(dag.tags),
        "retries": dag.default_args.get("retries"),
    }))
    """
)


def test_dag_loads_thin(airflow_env, tmp_path):
    home, env = airflow_env
    script = tmp_path / "load_dag.py"
    script.write_text(LOAD_SCRIPT)
    proc = subprocess.run([str(AIRFLOW_PY), str(script), str(REPO / "airflow" / "dags")],
                          env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    assert result["import_errors"] == {}
    assert result["heavy"] == []  # nothing of kaudit, Spark, dbt or GX at parse time
    assert result["upstream"] == {
        "plan": [],
        "sources": ["plan"],
        "extract": ["sources"],
        "spark_core": ["extract", "plan"],
        "dbt": ["plan", "spark_core"],
        "validate": ["dbt", "plan"],
        "report": ["plan", "validate"],
    }
    assert result["params"] == ["config", "kaudit_home", "spark_conn_id"]
    assert result["tags"] == ["audit", "kafka", "kaudit"] and result["retries"] == 2


def test_dag_runs_whole_chain_on_demo(airflow_env, tmp_path):
    from pipelines.demo import write_cluster

    home, env = airflow_env
    demo = write_cluster(tmp_path / "demo")
    warehouse = tmp_path / "warehouse"
    config = tmp_path / "audit.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            warehouse: {warehouse}
            sources:
              zookeeper:
                - data_dir: {demo / "zookeeper"}
              kafka:
                log_dirs: [{demo / "kafka-logs"}]
                workers: 1
            spark:
              master: "local[2]"
            """
        )
    )
    script = tmp_path / "run_dag.py"
    script.write_text(SCRIPT)
    started = time.monotonic()
    proc = subprocess.run(
        [str(AIRFLOW_PY), str(script), str(REPO / "airflow" / "dags"), str(config)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=2600,
    )
    took = time.monotonic() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-4000:], proc.stderr[-6000:])
    result = json.loads(lines[-1][len("RESULT ") :])
    print(f"dag.test() on the demo cluster: {took:.0f}s")

    assert result["import_errors"] == {}
    assert result["tags"] == ["audit", "kafka", "kaudit"] and result["retries"] == 2
    states = {(task, index): state for task, index, state in result["tasks"]}
    assert result["state"] == "success", (states, proc.stdout[-6000:])
    assert all(state == "success" for state in states.values()), states
    assert {t for t, _ in states} == {"plan", "sources", "extract", "spark_core", "dbt", "validate", "report"}
    assert sorted(i for t, i in states if t == "extract") == [0, 1, 2]  # zookeeper, offsets, log-end

    # each task wrote its part of the run named by the logical date
    tables = ("raw/znodes", "raw/offset_commits", "raw/log_end_offsets", "core/assignment_audit", "marts/consumer_lag")
    for table in tables:
        part = warehouse / table / f"run_id={RUN_ID}"
        assert part.is_dir() and list(part.glob("*.parquet")), table
    summary = json.loads((warehouse / "reports" / f"run_id={RUN_ID}" / "summary.json").read_text())
    assert summary["run_id"] == RUN_ID and summary["inputs"]["znodes"] > 0
    results = json.loads((warehouse / "validation" / f"run_id={RUN_ID}" / "results.json").read_text())
    assert results and {"suite", "expectation", "success", "unexpected_count"} <= set(results[0])
