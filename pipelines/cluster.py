"""Cluster mode: every Spark step as ``spark-submit pipelines/jobs/<step>.py``.

With a master that is not local (``spark://``, ``yarn``, ``k8s://``, ...) kaudit does not start
Spark in its own process: it builds a zip of the ``pipelines`` package, and runs

    spark-submit --master URL --py-files pipelines-<hash>.zip [--conf k=v ...] \
        <pipelines>/jobs/<step>.py --warehouse DIR --run-id ID [step args]

exactly as a user (or Airflow's SparkSubmitOperator) would. Why a subprocess and not the
running process with the zip added (``SparkContext.addPyFile``):

- it is the one path that every deployment shares (ad-hoc, Airflow, ``kaudit --spark-master``),
  so what is tested is what runs in production;
- ``--deploy-mode cluster`` (YARN, Kubernetes) needs a driver that is *not* this process;
- driver settings (``spark.driver.memory``, extra JVM options, jars) only take effect before
  the driver JVM starts, which spark-submit does and an in-process session cannot;
- a failed or killed job cannot take the CLI's JVM (or the Airflow worker) with it.

The warehouse needs no mount the nodes share: the job gets the catalog and the tables'
location (``--warehouse LOCATION --catalog URI --warehouse-local DIR``) and spark-submit gets Iceberg's jars
(``spark.jars``, fetched by the executors from the driver) and the catalog's settings, S3's
endpoint and keys among them (``spark.sql.catalog.kaudit.*``): the executors read and write the
tables' files at their location (``s3a://bucket/prefix``) through Iceberg's FileIO, and only the
driver, which commits every snapshot, opens the catalog and the local directory.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from pipelines.context import RunContext
from pipelines.errors import ExpectationsFailed, StepError, UsageError
from pipelines.procs import die_with, inside_spark_submit

PACKAGE_DIR = Path(__file__).resolve().parent
JOBS_DIR = PACKAGE_DIR / "jobs"
# Not shipped to executors: bytecode, and the demo inputs (read by the driver, never by Spark).
_EXCLUDE_DIRS = {"__pycache__"}
_EXCLUDE_PREFIXES = ("pipelines/demo/data/",)
_EXCLUDE_SUFFIXES = {".pyc", ".pyo", ".so"}
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: same sources, same bytes, same hash


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def submits(ctx: RunContext) -> bool:
    """Whether a Spark step of ``ctx`` runs through spark-submit (``ctx.spark_submit``; unset: a
    non-local master), rather than in this process. Never from inside a spark-submit driver."""
    if inside_spark_submit():
        return False
    return (not is_local(ctx.spark_master)) if ctx.spark_submit is None else ctx.spark_submit


# --- the shipped package -----------------------------------------------------------------------


def package_bytes() -> bytes:
    """A deterministic zip of the ``pipelines`` package (sources + small package data)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(PACKAGE_DIR.rglob("*")):
            rel = path.relative_to(PACKAGE_DIR.parent)
            if (
                path.is_dir()
                or path.suffix in _EXCLUDE_SUFFIXES
                or _EXCLUDE_DIRS & set(rel.parts[:-1])
                or rel.as_posix().startswith(_EXCLUDE_PREFIXES)
            ):
                continue
            info = zipfile.ZipInfo(rel.as_posix(), _ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def build_package(out_dir: str | os.PathLike | None = None) -> Path:
    """Write the zip for ``--py-files`` (named by content hash, reused when unchanged)."""
    data = package_bytes()
    out = Path(out_dir) if out_dir else Path(tempfile.gettempdir()) / f"kaudit-dist-{os.getuid()}"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"pipelines-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


# --- spark-submit ------------------------------------------------------------------------------


def spark_submit_binary() -> Path:
    """``$SPARK_HOME/bin/spark-submit`` (a cluster's own Spark), else the pyspark wheel's."""
    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "bin" / "spark-submit").exists():
        return Path(home) / "bin" / "spark-submit"
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


def job_path(step: str) -> Path:
    path = JOBS_DIR / f"{step}.py"
    if not path.exists():
        raise UsageError(f"no Spark job {step!r} (expected {path})")
    return path


def submit_command(
    ctx: RunContext, step: str, args: list[str] | None = None, py_files: Path | None = None
) -> list[str]:
    """The spark-submit command line of one job (what Airflow's SparkSubmitHook also builds), with
    ``ctx.spark_conf`` as ``--conf``. A driver on this machine (client mode, a master on
    loopback) starts as kaudit's own (:func:`_driver_here`) unless ``ctx.spark_conf`` says
    otherwise."""
    cmd = [str(spark_submit_binary()), "--master", ctx.spark_master or "local[*]",
           "--name", f"kaudit-{step}-{ctx.run_id}"]
    cmd += ["--py-files", str(py_files or build_package())]
    conf = {**warehouse_conf(ctx.warehouse), **ctx.spark_conf}
    if _loopback_master(ctx.spark_master) and conf.get("spark.submit.deployMode", "client") == "client":
        conf = _driver_here(ctx, conf)
    for key, value in sorted(conf.items()):
        cmd += ["--conf", f"{key}={value}"]
    return cmd + job_command(ctx, step, args)


def _driver_here(ctx: RunContext, conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with the heap and JVM options of a driver kaudit starts itself (the JIT of a small
    run when the run is one; ``conf``'s own settings win): on the demo's ZooKeeper run, the dbt
    job on ``local[2]`` took half the CPU with them (docs/benchmarks.md). With a local
    master the driver is also the executor and gets kaudit's jar as kaudit's own driver does, so
    its classpath is the class archive's; with a standalone cluster on loopback the executors
    would lack the jar's classes, and without the jar the archive cannot map (the JVM would warn)."""
    from pipelines.spark import jar
    from pipelines.spark.session import driver_settings, is_small_run
    from pipelines.warehouse.reading import run_rows

    small, local = is_small_run(run_rows(ctx.warehouse, ctx.run_id)), is_local(ctx.spark_master)
    settings = driver_settings(quiet=False, small=small, archive=local)
    return {**settings, **conf, **(jar.settings(conf) if local else {})}


def warehouse_conf(warehouse) -> dict[str, str]:
    """The spark-submit settings a warehouse needs: its catalog as Spark's catalog ``kaudit`` and
    Iceberg's jars (:func:`pipelines.warehouse.iceberg.spark.session_conf`)."""
    from pipelines.warehouse.iceberg.spark import session_conf

    return session_conf(warehouse)


def warehouse_args(warehouse) -> list[str]:
    """The job's options naming ``warehouse``: the tables' location, the catalog and the driver's
    local directory."""
    config = warehouse.catalog_config
    return ["--warehouse", config.location, "--catalog", config.uri, "--warehouse-local", str(warehouse.root)]


def job_command(ctx: RunContext, step: str, args: list[str] | None = None) -> list[str]:
    """The job's script and its arguments (the run's warehouse, ``--run-id``, then ``args``):
    what follows spark-submit's own options."""
    return [str(job_path(step)), *warehouse_args(ctx.warehouse), "--run-id", ctx.run_id, *(args or [])]


def submit_job(ctx: RunContext, step: str, args: list[str] | None = None) -> None:
    """Run ``pipelines/jobs/<step>.py`` through spark-submit on ``ctx.spark_master``; the job's
    output goes to ``runs/run_id=<id>/spark-<step>.log``. :class:`StepError` when it fails."""
    cmd = submit_command(ctx, step, args)
    env = dict(os.environ)
    # Executors and the driver run the same Python as kaudit unless the cluster says otherwise.
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if _loopback_master(ctx.spark_master):  # a cluster on this machine: keep Spark on loopback
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log = ctx.warehouse.meta_path(ctx.run_id, f"spark-{step}").with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    ctx.say(f"{step}: spark-submit --master {ctx.spark_master} ({log.name})")
    started = time.monotonic()
    with open(log, "wb") as out:  # spark-submit dies with kaudit (a kill -9 leaves no driver behind)
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False,
                              preexec_fn=functools.partial(die_with, os.getpid()))
    took = time.monotonic() - started
    if proc.returncode == ExpectationsFailed.exit_code:  # validate.py --strict
        raise ExpectationsFailed(f"{step}: {_last_error(log)} (log: {log})")
    if proc.returncode != 0:
        raise StepError(f"{step}: spark-submit exited {proc.returncode} after {took:.0f}s: {_last_error(log)} "
                        f"(log: {log})")
    ctx.say(f"{step}: done on {ctx.spark_master} in {took:.1f}s")


def _loopback_master(master: str | None) -> bool:
    if is_local(master):
        return True
    hosts = master.split("://", 1)[-1].split(",")
    return all(h.rsplit(":", 1)[0].strip("[]") in ("127.0.0.1", "localhost", "::1") for h in hosts)


def _last_error(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.startswith("kaudit:") or "Error" in line or "Exception" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no output"


def main(argv: list[str] | None = None) -> None:
    """``python -m pipelines.cluster package [--out DIR]``: build the ``--py-files`` zip and print
    its path (Airflow's Spark task and hand-written spark-submit commands use it)."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != "package":
        print("usage: python -m pipelines.cluster package [--out DIR]", file=sys.stderr)
        sys.exit(2)
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    print(build_package(out))


if __name__ == "__main__":
    main()
