"""kaudit_audit: the kaudit pipeline on a schedule (Airflow 3, TaskFlow).

    plan -> extract[per source, in parallel] -> spark_core -> dbt -> validate -> report

The DAG is thin: every task runs kaudit from *its own* installation (``$KAUDIT_HOME/.venv``),
never from Airflow's environment (Airflow's Spark provider pulls ``pyspark-client``, which
must not meet kaudit's pyspark). What runs comes from one config file (``examples/audit.yaml``):
``kaudit run --config FILE --plan`` lists its units, and each task runs one of them.

- run id: the run's logical date as ``YYYYMMDDTHHMMSSZ`` (UTC), passed as ``--run-id``. Every task
  writes only that run's partitions, atomically, so a retry or a cleared task just redoes it.
- Spark steps (core tables, dbt): ``spark-submit pipelines/jobs/<step>.py`` through the Apache
  Spark provider's ``SparkSubmitHook``; the master comes from the Airflow connection named by the
  ``spark_conn_id`` param (e.g. ``spark://master:7077``, ``yarn``, ``k8s://...``, ``local[*]``).
  With ``spark_conn_id`` empty, or naming a connection Airflow does not have (a fresh Airflow
  home has no ``kaudit_spark``), the config's ``spark.master`` is used through ``kaudit run``
  (``local[*]`` in the shipped example) and the task log says so: the provider's own fallback
  for a missing connection would be ``--master yarn``.
- exit codes: 2 (bad config/usage) and 3 (``validate.strict`` failed) fail without retry.

Deploy: put this file in the dags folder; on the workers install kaudit (``make venv`` in a
checkout, or ``pip install kaudit`` into a venv) and set ``KAUDIT_HOME`` to it; create the Spark
connection; trigger with ``{"config": "/path/to/audit.yaml"}`` or set the default in ``KAUDIT_CONFIG``.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import Param, dag, task

KAUDIT_HOME = os.environ.get("KAUDIT_HOME", "/opt/kaudit")
NO_RETRY_EXIT_CODES = {2: "usage or config error", 3: "strict expectations failed"}


def _params() -> dict:
    from airflow.sdk import get_current_context

    return get_current_context()["params"]


def _run_id() -> str:
    """The run id of this DAG run: its logical date (or, without one, its run-after time)."""
    from airflow.sdk import get_current_context

    context = get_current_context()
    when = context.get("logical_date") or context["dag_run"].run_after
    return when.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _venv_bin() -> str:
    return os.path.join(_params()["kaudit_home"], ".venv", "bin")


def _run(argv: list[str]) -> str:
    """Run a kaudit command; its output goes to the task log; stdout is returned."""
    import subprocess

    from airflow.sdk.exceptions import AirflowFailException

    home = _params()["kaudit_home"]
    print("$ " + " ".join(argv), flush=True)
    proc = subprocess.run(argv, cwd=home, capture_output=True, text=True, check=False)
    if proc.stderr:
        print(proc.stderr, flush=True)
    if proc.returncode in NO_RETRY_EXIT_CODES:
        raise AirflowFailException(f"kaudit exited {proc.returncode} ({NO_RETRY_EXIT_CODES[proc.returncode]})")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"kaudit exited {proc.returncode}: {last}")
    return proc.stdout


def _has_connection(conn_id: str) -> bool:
    """Whether Airflow knows the connection ``conn_id`` (metadata database, secrets backend or an
    ``AIRFLOW_CONN_*`` variable)."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        Connection.get(conn_id)
    except AirflowNotFoundException:
        return False
    return True


def _kaudit_run(run_id: str, *args: str) -> str:
    kaudit = os.path.join(_venv_bin(), "kaudit")
    return _run([kaudit, "--run-id", run_id, "run", "--config", _params()["config"], *args])


@dag(
    dag_id="kaudit_audit",
    description="Audit of Kafka consumer coordination (ZooKeeper + __consumer_offsets) with kaudit",
    schedule=os.environ.get("KAUDIT_SCHEDULE", "@daily"),
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kaudit", "kafka", "audit"],
    default_args={"retries": 2, "retry_delay": timedelta(minutes=2)},
    params={
        "config": Param(os.environ.get("KAUDIT_CONFIG", f"{KAUDIT_HOME}/examples/audit.yaml"), type="string",
                        description="Path of the audit.yaml (on the workers)."),
        "kaudit_home": Param(KAUDIT_HOME, type="string", description="kaudit checkout/install with its .venv."),
        "spark_conn_id": Param("kaudit_spark", type="string",
                               description="Spark connection for spark-submit; empty or not defined in Airflow: "
                               "the config's spark.master."),
    },
    doc_md=__doc__,
)
def kaudit_audit():
    @task
    def plan() -> dict:
        """Validate the config and list its units (fails fast, no retry, on a bad config)."""
        import json

        return json.loads(_kaudit_run(_run_id(), "--plan"))

    @task
    def sources(plan: dict) -> list[str]:
        """The extract units of the plan, one mapped ``extract`` task each."""
        return plan["extract_units"]

    @task
    def extract(unit: str) -> None:
        """One source into the run's raw tables."""
        _kaudit_run(_run_id(), "--only", unit)

    @task(trigger_rule="none_failed")
    def spark_job(plan: dict, unit: str) -> None:
        """A Spark step as spark-submit pipelines/jobs/<step>.py, through the Spark provider."""
        from airflow.sdk.exceptions import AirflowSkipException

        if unit not in plan["units"]:
            raise AirflowSkipException(f"{unit} is not a step of this config")
        run_id = _run_id()
        conn_id = _params()["spark_conn_id"]
        if conn_id and not _has_connection(conn_id):
            print(f"no Airflow connection {conn_id!r}: {unit} runs with the config's spark.master "
                  f"(kaudit run); create the connection to spark-submit through Airflow", flush=True)
            conn_id = ""
        if not conn_id:
            _kaudit_run(run_id, "--only", unit)
            return
        from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

        venv_bin = _venv_bin()
        python = os.path.join(venv_bin, "python")
        # spark-submit, the driver and (on shared hosts) executors: kaudit's venv, not Airflow's.
        os.environ["PATH"] = venv_bin + os.pathsep + os.environ.get("PATH", "")
        os.environ.setdefault("PYSPARK_PYTHON", python)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", python)
        py_files = _run([python, "-m", "pipelines.cluster", "package"]).strip().splitlines()[-1]
        job = plan["spark_jobs"][unit]  # application + args (--warehouse, --run-id, ...) from kaudit's plan
        hook = SparkSubmitHook(
            conn_id=conn_id,
            conf=plan["spark_conf"],
            py_files=py_files,
            name=f"kaudit-{unit}-{run_id}",
            application_args=job["application_args"],
        )
        hook.submit(job["application"])

    @task(trigger_rule="none_failed")
    def step(plan: dict, unit: str) -> None:
        from airflow.sdk.exceptions import AirflowSkipException

        if unit not in plan["units"]:
            raise AirflowSkipException(f"{unit} is not a step of this config")
        _kaudit_run(_run_id(), "--only", unit)

    p = plan()
    extracted = extract.expand(unit=sources(p))
    core = spark_job.override(task_id="spark_core")(p, "build")
    dbt = spark_job.override(task_id="dbt")(p, "dbt")
    validate = step.override(task_id="validate")(p, "validate")
    report = step.override(task_id="report")(p, "report")
    extracted >> core >> dbt >> validate >> report


kaudit_audit()
