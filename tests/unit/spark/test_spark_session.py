"""The JVM and conf of a SparkSession kaudit starts itself."""

from __future__ import annotations


def test_a_session_kaudit_starts_runs_the_throughput_collector_and_its_jit_limits_on_loopback(spark):
    """The fixture's session is a small run's (C1 alone); a big run's JVM keeps C2 with its limits."""
    from pyspark.errors.utils import is_debugging_enabled

    from pipelines.spark.session import JIT, JIT_SMALL, METASPACE, driver_java_options

    jvm = spark.sparkContext._jvm
    management = jvm.java.lang.management.ManagementFactory
    assert sorted(bean.getName() for bean in management.getGarbageCollectorMXBeans()) == ["PS MarkSweep", "PS Scavenge"]
    assert {*JIT_SMALL.split(), METASPACE} <= set(management.getRuntimeMXBean().getInputArguments())
    assert JIT in driver_java_options(quiet=True) and JIT_SMALL not in driver_java_options(quiet=True)
    assert jvm.org.apache.spark.SparkEnv.get().memoryManager().pageSizeBytes() == 2 << 20  # Tungsten pages
    assert not is_debugging_enabled()  # PySpark's per-Column call-site capture
    conf = spark.sparkContext.getConf()
    assert (conf.get("spark.driver.bindAddress"), conf.get("spark.driver.host")) == ("127.0.0.1", "127.0.0.1")


def test_code_generation_and_planning_follow_the_run_size(spark):
    from pipelines.spark.session import SIZED, SMALL_RUN_ROWS, size_to_run

    def settings():
        return {key: spark.conf.get(key) for key in SIZED}

    def counts():
        return spark.range(1000).selectExpr("id % 7 as k").groupBy("k").count().orderBy("k").collect()

    try:
        size_to_run(spark, SMALL_RUN_ROWS - 1)
        assert settings() == {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                              "spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1",
                              "spark.kaudit.onePartition": "true"}
        small = counts()
        size_to_run(spark, SMALL_RUN_ROWS)
        assert settings() == {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK",
                              "spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": "8",
                              "spark.kaudit.onePartition": "false"}
        assert counts() == small == [(k, 143 if k < 6 else 142) for k in range(7)]
    finally:
        size_to_run(spark, 0)  # back to the session fixture's sizing (tests/conftest.py)


def test_a_runtime_setting_is_restored_after_its_block_even_on_error(spark):
    from pipelines.spark.session import runtime_setting

    key = "spark.sql.caseSensitive"
    assert spark.conf.get(key, None) is None  # not set: Spark's default applies
    try:
        with runtime_setting(spark, key, "false"):
            assert spark.conf.get(key) == "false"
            raise RuntimeError("in the block")
    except RuntimeError:
        pass
    assert spark.conf.get(key, None) is None
    spark.conf.set(key, "true")
    try:
        with runtime_setting(spark, key, "false"):
            assert spark.conf.get(key) == "false"
        assert spark.conf.get(key) == "true"
    finally:
        spark.conf.unset(key)


def test_code_generation_the_session_was_started_with_is_kept(tmp_path):
    """A key of the user's conf (here through spark-submit's --conf, as a cluster job gets it)
    is not resized, nor changed for a block by ``runtime_setting``."""
    import subprocess
    import sys

    from pipelines.cluster import spark_submit_binary

    script = tmp_path / "job.py"
    script.write_text(
        "from pipelines.spark.session import get_spark, runtime_setting, size_to_run\n"
        "spark = get_spark()\n"
        "size_to_run(spark, 10)\n"
        "with runtime_setting(spark, 'spark.sql.codegen.wholeStage', 'false'):\n"
        "    inside = spark.conf.get('spark.sql.codegen.wholeStage')\n"
        "get = spark.conf.get\n"
        "print(inside, get('spark.sql.codegen.wholeStage'), get('spark.sql.codegen.factoryMode'))\n"
    )
    out = subprocess.run(
        [str(spark_submit_binary()), "--master", "local[1]", "--conf", "spark.sql.codegen.wholeStage=true",
         "--conf", f"spark.pyspark.python={sys.executable}", str(script)],
        capture_output=True, text=True, timeout=300, check=True,
    )
    assert out.stdout.split()[-3:] == ["true", "true", "NO_CODEGEN"]


def test_the_driver_jvm_maps_the_class_archive_make_built(spark, tmp_path):
    """``make`` builds the class archive and every driver JVM kaudit starts maps it: the fixture's
    JVM was started with it, and one started with ``-Xshare:on`` (which refuses to start when it
    cannot map the archive: another JDK, other jars) runs a query, with nothing on stdout; so
    does one with the JIT of a small run."""
    import subprocess
    import sys

    from pipelines.spark.session import CLASS_ARCHIVE, driver_java_options

    assert CLASS_ARCHIVE.is_file(), "make builds it (pipelines.spark.class_archive)"
    arguments = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    assert f"-XX:SharedArchiveFile={CLASS_ARCHIVE}" in list(arguments)

    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from pipelines.spark.session import get_spark\n"
        f"options = {driver_java_options(quiet=True, small=True) + ' -Xshare:on'!r}\n"
        "spark = get_spark(conf={'spark.driver.extraJavaOptions': options}, log=Path(sys.argv[1]))\n"
        "print(spark.range(7).where('id % 2 = 0').count())\n"
    )
    log = tmp_path / "jvm.log"
    out = subprocess.run([sys.executable, str(script), str(log)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, log.read_text() if log.exists() else out.stderr
    assert out.stdout == "4\n"


def test_a_small_runs_jvm_compiles_with_c1_alone(tmp_path):
    """``RunContext.spark`` starts the JVM of a run with fewer raw rows than SMALL_RUN_ROWS
    (here none yet, as the demo's session starts before its extracts) with C1 alone and the
    code cache tiered compilation reserves."""
    import subprocess
    import sys

    script = tmp_path / "job.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from pipelines.context import RunContext\n"
        "from pipelines.warehouse.warehouse import Warehouse\n"
        "spark = RunContext(Warehouse(Path(sys.argv[1])), 'small', quiet=True).spark()\n"
        "jvm = spark.sparkContext._jvm\n"
        "bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(\n"
        "    jvm.java.lang.Class.forName('com.sun.management.HotSpotDiagnosticMXBean'))\n"
        "print(*(bean.getVMOption(o).getValue() for o in ('TieredStopAtLevel', 'ReservedCodeCacheSize')))\n"
        "print(spark.range(7).where('id % 2 = 0').count())\n"
    )
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "warehouse")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", str(240 << 20), "4"]
