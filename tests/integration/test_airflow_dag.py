"""The Airflow DAG in a real Airflow 3 (its own venv, ``make airflow-venv``): it loads thin with no
import errors, and one ``dag.test()`` runs the whole chain as a newcomer meets it: a fresh
Airflow home, the shipped ``examples/audit.yaml`` (a verbatim copy, pointed at a demo cluster by
its own ``KAUDIT_DEMO`` variable) and no ``kaudit_spark`` connection, so ``spark_core`` runs with
the config's master through ``kaudit run`` (not the provider's ``--master yarn``); the connection
is then defined (``AIRFLOW_CONN_KAUDIT_SPARK``, local Spark with 2 threads) as ``dbt`` starts, so
``dbt`` is spark-submitted through the Apache Spark provider's hook with the connection's master.
Every task succeeds and the run's tables, validation results and report exist."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from pipelines.warehouse.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2700)]

REPO = Path(__file__).resolve().parents[2]
AIRFLOW_PY = REPO / ".venv-airflow" / "bin" / "python"
RUN_ID = "20240501T000000Z"  # the logical date below
SPARK_CONN = json.dumps({"conn_type": "spark", "host": "local[2]"})

# argv: dags folder, the Airflow connection's JSON to define as the task `dbt` starts
SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from datetime import datetime, timezone

    from airflow.dag_processing.dagbag import DagBag
    from airflow.exceptions import AirflowNotFoundException
    from airflow.models import Connection
    from airflow.sdk._shared.listeners import hookimpl
    from airflow.sdk.listener import get_listener_manager

    out = {}
    try:
        Connection.get_connection_from_secrets("kaudit_spark")
        out["had_connection"] = True
    except AirflowNotFoundException:
        out["had_connection"] = False


    class DefineTheConnection:
        # the operator creates the Spark connection while the run goes on: as `dbt` starts

        @hookimpl
        def on_task_instance_running(self, previous_state, task_instance):
            if task_instance.task_id == "dbt":
                os.environ["AIRFLOW_CONN_KAUDIT_SPARK"] = sys.argv[2]


    get_listener_manager().add_listener(DefineTheConnection())
    bag = DagBag(dag_folder=sys.argv[1])
    dag = bag.dags.get("kaudit_audit")
    out.update({"import_errors": {k: str(v)[-500:] for k, v in bag.import_errors.items()},
                "tags": sorted(dag.tags) if dag else [],
                "retries": dag.default_args.get("retries") if dag else None})
    if dag is not None:
        run = dag.test(logical_date=datetime(2024, 5, 1, tzinfo=timezone.utc))
        from airflow.utils.session import create_session
        from airflow.models import TaskInstance
        with create_session() as session:
            tis = session.query(TaskInstance).filter(TaskInstance.run_id == run.run_id).all()
            out["state"] = str(run.state)
            out["tasks"] = sorted([ti.task_id, ti.map_index, str(ti.state), ti.duration] for ti in tis)
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def airflow_env(tmp_path_factory):
    """A fresh Airflow home (no connections) whose DAG reads a verbatim copy of the shipped
    example config, pointed at a demo cluster by ``KAUDIT_DEMO``; its warehouse: ``../warehouse``
    from the copy, i.e. ``<root>/warehouse``."""
    from pipelines.demo import write_cluster

    if not AIRFLOW_PY.exists():
        pytest.fail("Airflow is not installed: run `make airflow-venv` (make test does)")
    root = tmp_path_factory.mktemp("airflow")
    home = root / "airflow-home"
    demo = write_cluster(root / "demo-out")
    config = root / "examples" / "audit.yaml"
    config.parent.mkdir()
    shutil.copyfile(REPO / "examples" / "audit.yaml", config)
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
            "KAUDIT_CONFIG": str(config),
            "KAUDIT_DEMO": str(demo),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PATH": f"{REPO / '.venv-airflow' / 'bin'}:{os.environ.get('PATH', '')}",
        }
    )
    home.mkdir()
    migrate = subprocess.run(
        [str(AIRFLOW_PY), "-m", "airflow", "db", "migrate"], env=env, capture_output=True, text=True, timeout=600
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    return root, env


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
    _, env = airflow_env
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


def test_dag_runs_the_shipped_example_on_the_demo_to_the_report(airflow_env):
    root, env = airflow_env
    script = root / "run_dag.py"
    script.write_text(SCRIPT)
    started = time.monotonic()
    proc = subprocess.run(
        [str(AIRFLOW_PY), str(script), str(REPO / "airflow" / "dags"), SPARK_CONN],
        cwd=root, env=env, capture_output=True, text=True, timeout=2600,
    )
    took = time.monotonic() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    log = proc.stdout + proc.stderr + "".join(
        p.read_text(errors="replace") for p in (root / "airflow-home" / "logs").rglob("*.log"))
    assert proc.returncode == 0 and lines, (proc.stdout[-4000:], proc.stderr[-6000:])
    result = json.loads(lines[-1][len("RESULT ") :])
    print(f"dag.test() of the shipped example on the demo cluster: {took:.0f}s; tasks (s): "
          + ", ".join(f"{t}[{i}] {d or 0:.0f}" for t, i, _, d in result["tasks"]))

    assert result["had_connection"] is False  # the fresh home has no kaudit_spark
    assert result["import_errors"] == {}
    assert result["tags"] == ["audit", "kafka", "kaudit"] and result["retries"] == 2
    states = {(task, index): state for task, index, state, _ in result["tasks"]}
    assert result["state"] == "success", (states, log[-6000:])
    assert all(state == "success" for state in states.values()), states
    assert {t for t, _ in states} == {"plan", "sources", "extract", "spark_core", "dbt", "validate", "report"}
    assert sorted(i for t, i in states if t == "extract") == [0, 1, 2]  # zookeeper, offsets, log-end
    # spark_core without the connection: the config's master through kaudit run, never the
    # provider's yarn; dbt with it: spark-submit through the provider's hook, its master local[2]
    assert "no Airflow connection 'kaudit_spark': build runs with the config's spark.master" in log, log[-6000:]
    assert "no Airflow connection 'kaudit_spark': dbt" not in log
    assert "--master local[2]" in log and "pipelines/jobs/dbt_build.py" in log, log[-6000:]
    assert "--master yarn" not in log and "No tasks to run" not in log

    # each task wrote its part of the run named by the logical date, in the example's warehouse
    warehouse = root / "warehouse"
    tables = ("raw/znodes", "raw/offset_commits", "raw/log_end_offsets", "core/assignment_audit", "marts/consumer_lag")
    wh = Warehouse(warehouse)
    for table in tables:
        assert wh.row_count(table, RUN_ID) > 0, table
    report = warehouse / "reports" / f"run_id={RUN_ID}"
    summary = json.loads((report / "summary.json").read_text())
    assert summary["run_id"] == RUN_ID and summary["inputs"]["znodes"] > 0
    assert summary["inputs"]["offset_records"] > 0
    assert sum(summary["assignment"]["zookeeper"].values()) > 0
    assert (report / "index.html").is_file()
    results = json.loads((warehouse / "validation" / f"run_id={RUN_ID}" / "results.json").read_text())
    assert results and {"suite", "expectation", "success", "unexpected_count"} <= set(results[0])
