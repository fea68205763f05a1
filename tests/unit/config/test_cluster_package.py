"""Cluster mode without a cluster: the shipped zip and the spark-submit command line."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from pipelines import cluster
from pipelines.context import RunContext
from pipelines.errors import UsageError
from pipelines.warehouse.warehouse import Warehouse


def test_package_is_deterministic_and_importable(tmp_path):
    data = cluster.package_bytes()
    assert data == cluster.package_bytes()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "pipelines/__init__.py" in names
    assert "pipelines/jobs/dbt_build.py" in names and "pipelines/cluster.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith("pipelines/demo/data/")]
    path = cluster.build_package(tmp_path)
    assert path.read_bytes() == data and path.name.startswith("pipelines-")
    assert cluster.build_package(tmp_path) == path  # same sources: same file, reused


def test_submit_command(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    ctx = RunContext(
        Warehouse(tmp_path / "wh"), "r1", spark_master="spark://10.0.0.1:7077",
        spark_conf={"spark.executor.memory": "2g"},
    )
    zip_path = tmp_path / "p.zip"
    cmd = cluster.submit_command(ctx, "build_core", ["--assignor=g=range"], zip_path)
    assert Path(cmd[0]).name == "spark-submit" and Path(cmd[0]).exists()
    assert cmd[1:3] == ["--master", "spark://10.0.0.1:7077"]
    assert cmd[cmd.index("--py-files") + 1] == str(zip_path)
    assert "spark.executor.memory=2g" in [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]
    job = cmd.index(str(cluster.JOBS_DIR / "build_core.py"))
    assert cmd[job + 1 :] == ["--warehouse", (tmp_path / "wh").as_uri(), "--catalog",
                              f"sqlite:///{tmp_path / 'wh.catalog.db'}", "--warehouse-local", str(tmp_path / "wh"),
                              "--run-id", "r1", "--assignor=g=range"]
    with pytest.raises(UsageError, match="no Spark job 'nope'"):
        cluster.submit_command(ctx, "nope", py_files=zip_path)


def _conf(cmd: list[str]) -> dict[str, str]:
    return dict(cmd[i + 1].split("=", 1) for i, a in enumerate(cmd) if a == "--conf")


@pytest.mark.parametrize(
    ("master", "own", "local"),
    [
        ("local[2]", {}, True),
        ("spark://127.0.0.1:7077", {}, True),
        ("spark://10.0.0.1:7077", {}, False),  # the driver's JVM is the cluster's business
        ("local[2]", {"spark.submit.deployMode": "cluster"}, False),
        ("local[2]", {"spark.driver.memory": "8g", "spark.driver.extraJavaOptions": "-Dx=1"}, False),
    ],
)
def test_a_driver_on_this_machine_starts_as_kaudits_own(tmp_path, monkeypatch, master, own, local):
    """A job submitted to a master on loopback in client mode runs its driver here: it gets the
    heap and JVM options (the JIT of a small run: this run has no rows) of a driver kaudit starts
    itself; with a local master also kaudit's jar and the class archive, as kaudit's own driver
    (the archive maps only with the jar first on the classpath). The config's settings win."""
    from pipelines.spark import jar, session

    monkeypatch.delenv("SPARK_HOME", raising=False)
    ctx = RunContext(Warehouse(tmp_path / "wh"), "r1", spark_master=master, spark_conf=own)
    conf = _conf(cluster.submit_command(ctx, "dbt_build", [], tmp_path / "p.zip"))
    java = conf.get("spark.driver.extraJavaOptions")
    if local:
        here = master.startswith("local")
        assert conf["spark.driver.memory"] == session.DRIVER_MEMORY["spark.driver.memory"]
        assert java == session.driver_java_options(quiet=False, small=True, archive=here)
        assert session.JIT_SMALL in java and "-XX:+UseParallelGC" in java
        assert (("-XX:SharedArchiveFile" in java) == (here and session.CLASS_ARCHIVE.is_file()))
        if jar.JAR.is_file():  # the jar first, the warehouse's Iceberg extensions kept
            assert conf.get(jar.CLASSPATH, "").startswith(str(jar.JAR)) == here
            extensions = conf["spark.sql.extensions"].split(",")
            assert (jar.EXTENSION in extensions) == here and len(extensions) == 1 + here
    else:
        assert (conf.get("spark.driver.memory"), java) == (
            own.get("spark.driver.memory"), own.get("spark.driver.extraJavaOptions"))


def test_submit_command_of_an_iceberg_warehouse_on_s3(tmp_path, monkeypatch):
    """The job gets the tables' location, format, catalog and local directory; spark-submit gets
    Iceberg's jars and the catalog's S3 settings from the environment (the executors have no
    shared mount and none of the driver's environment); the config's own conf wins."""
    from pipelines.jobs.common import job_parser
    from pipelines.warehouse.iceberg import jars
    from pipelines.warehouse.warehouse import open_warehouse

    monkeypatch.delenv("SPARK_HOME", raising=False)
    for key, value in {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "id",
                       "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-west-1",
                       "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_RESPONSE_CHECKSUM_VALIDATION", raising=False)
    wh = open_warehouse("s3a://bucket/wh", str(tmp_path / "cat.db"), tmp_path / "local")
    own = {"spark.executor.memory": "2g", "spark.sql.catalog.kaudit.s3.endpoint": "http://s3:9000"}
    ctx = RunContext(wh, "r1", spark_master="spark://10.0.0.1:7077", spark_conf=own)
    cmd = cluster.submit_command(ctx, "build_core", [], tmp_path / "p.zip")
    conf = _conf(cmd)
    assert conf["spark.jars"] == ",".join(str(j) for j in jars.paths())
    assert conf["spark.sql.catalog.kaudit.warehouse"] == "s3a://bucket/wh"
    assert conf["spark.sql.catalog.kaudit.uri"] == f"jdbc:sqlite:{tmp_path / 'cat.db'}"
    assert conf["spark.sql.catalog.kaudit.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert conf["spark.sql.catalog.kaudit.s3.access-key-id"] == "id"
    assert conf["spark.sql.catalog.kaudit.client.region"] == "eu-west-1"
    assert conf["spark.sql.catalog.kaudit.s3.endpoint"] == "http://s3:9000"  # the config's
    assert conf["spark.executorEnv.AWS_REQUEST_CHECKSUM_CALCULATION"] == "when_required"
    assert "spark.executorEnv.AWS_RESPONSE_CHECKSUM_VALIDATION" not in conf
    assert conf["spark.executor.memory"] == "2g"
    job = cmd.index(str(cluster.JOBS_DIR / "build_core.py"))
    args = job_parser("build_core.py", "x").parse_args(cmd[job + 1:])
    assert (args.warehouse, args.catalog, args.warehouse_local, args.run_id) == (
        "s3a://bucket/wh", f"sqlite:///{tmp_path / 'cat.db'}", str(tmp_path / "local"), "r1")
    # the job opens the same warehouse: same local directory, location and catalog
    again = open_warehouse(args.warehouse, args.catalog, args.warehouse_local)
    assert (again.root, again.catalog_config) == (wh.root, wh.catalog_config)


@pytest.mark.parametrize(
    ("master", "force", "env", "expected"),
    [
        (None, None, {}, False),
        ("local[2]", None, {}, False),
        ("spark://h:7077", None, {}, True),
        ("yarn", None, {}, True),
        ("k8s://https://h:6443", None, {}, True),
        ("local[2]", True, {}, True),
        ("spark://h:7077", False, {}, False),
        ("spark://h:7077", None, {"SPARK_ENV_LOADED": "1"}, False),  # already inside spark-submit
    ],
)
def test_when_steps_are_submitted(tmp_path, monkeypatch, master, force, env, expected):
    monkeypatch.delenv("SPARK_ENV_LOADED", raising=False)
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    ctx = RunContext(Warehouse(tmp_path), "r1", spark_master=master, spark_submit=force)
    assert cluster.submits(ctx) is expected
