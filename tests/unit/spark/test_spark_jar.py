"""kaudit's jar (``pipelines/spark/jar.py``): its ``file:`` scheme (``NioLocalFileSystem.java``),
Hadoop's local file system with permissions set in-process, to the same mode bits as Hadoop's
own; its session extension (``OnePartition.java``), a small run's exchanges into one partition
made coalesces, with the rows Spark's own exchanges give."""

from __future__ import annotations

import os
import re
import stat

import pytest


@pytest.fixture()
def hadoop(spark):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()

    def fs(name: str):
        constructor = jvm
        for part in name.split("."):
            constructor = getattr(constructor, part)
        instance = constructor()
        instance.initialize(jvm.java.net.URI("file:///"), conf)
        return instance

    return jvm, fs


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_sessions_kaudit_starts_write_through_it(spark, tmp_path):
    from pipelines.spark.jar import CLASS, JAR

    assert JAR.is_file(), "make builds it (pipelines.spark.jar)"
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert fs.getClass().getName() == CLASS

    out = tmp_path / "t"
    spark.range(10).repartition(2).write.parquet(str(out))
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == 2 and spark.read.parquet(str(out)).count() == 10
    # Hadoop's defaults (0777 / 0666) less its umask 022, as Hadoop's own file system sets them
    assert mode(out) == 0o755 and {mode(p) for p in parts} == {0o644}


def test_the_hadoop_configuration_a_query_ships_has_no_yarn_defaults(spark):
    """The jar's empty yarn-default.xml comes before Hadoop's: no YARN key in the configuration
    Spark copies for a query, Hadoop's core defaults still there."""
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    entries, keys = conf.iterator(), []
    while entries.hasNext():
        keys.append(entries.next().getKey())
    # (yarn.app.mapreduce.* are MapReduce's, from mapred-default.xml)
    assert keys and not [k for k in keys if k.startswith("yarn.") and not k.startswith("yarn.app.mapreduce.")]
    assert conf.get("fs.defaultFS") == "file:///" and conf.get("io.file.buffer.size") == "65536"


@pytest.mark.parametrize("bits", [0o755, 0o644, 0o750, 0o600, 0o000, 0o777, 0o1777, 0o2750])
def test_it_sets_the_modes_hadoops_own_file_system_sets(hadoop, tmp_path, bits):
    """The same operations through Hadoop's LocalFileSystem (a ``chmod`` process each) and through
    kaudit's leave the same mode bits; a sticky bit goes to Hadoop's code, as before (FsPermission
    carries no setuid or setgid)."""
    from pipelines.spark.jar import CLASS

    jvm, fs = hadoop
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission(bits)
    modes = {}
    for name in ("org.apache.hadoop.fs.LocalFileSystem", CLASS):
        root = tmp_path / name
        files = fs(name)
        directory = jvm.org.apache.hadoop.fs.Path(str(root / "d"))
        assert files.mkdirs(directory)
        path = jvm.org.apache.hadoop.fs.Path(str(root / "f"))
        files.create(path).close()
        files.setPermission(path, permission)
        files.setPermission(directory, permission)
        modes[name] = (mode(root / "d"), mode(root / "f"))
        os.chmod(root / "d", 0o755)  # so that pytest can remove it
    assert modes["org.apache.hadoop.fs.LocalFileSystem"] == modes[CLASS]
    if bits <= 0o777:
        assert modes[CLASS] == (bits, bits)


def test_the_classpath_keeps_a_users_entries_and_a_users_file_system_wins(tmp_path):
    from pipelines.spark.jar import CLASS, EXTENSION, settings

    jar = tmp_path / "k.jar"
    assert settings({}, jar) == {}  # no jar, nothing changes
    jar.write_bytes(b"")
    assert settings({}, jar) == {"spark.driver.extraClassPath": str(jar), "spark.hadoop.fs.file.impl": CLASS,
                                 "spark.sql.extensions": EXTENSION}
    theirs = settings({"spark.driver.extraClassPath": "/x.jar", "spark.sql.extensions": "org.example.Ext"}, jar)
    assert theirs["spark.driver.extraClassPath"] == f"{jar}{os.pathsep}/x.jar"
    assert theirs["spark.sql.extensions"] == f"{EXTENSION},org.example.Ext"
    assert "spark.hadoop.fs.file.impl" not in settings({"spark.hadoop.fs.file.impl": "org.example.Fs"}, jar)


# a shuffle exchange in a plan's text (a broadcast exchange, "BroadcastExchange", stays)
SHUFFLE = re.compile(r"(?<![A-Za-z])Exchange (hashpartitioning|rangepartitioning|SinglePartition|RoundRobin)")


def test_a_small_runs_plans_coalesce_where_they_would_shuffle_into_one_partition(spark, tmp_path):
    """An aggregation, a broadcast join, a window, a full outer join of a checkpoint, a union, a
    count of distinct values, a global aggregation and a sort over two Parquet tables of 3 and 1
    files: sized for a small run, no shuffle exchange is left, each became a one-partition
    coalesce; sized for a big run (or with adaptive execution), Spark's exchanges stay. All
    give the rows computed here."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from pipelines.spark.session import size_to_run

    assert "kaudit.spark.OnePartition" in spark.conf.get("spark.sql.extensions")
    spark.range(500).selectExpr("id", "id % 7 as k").repartition(3).write.parquet(str(tmp_path / "a"))
    spark.range(10).selectExpr("id as k", "id * 2 as v").coalesce(1).write.parquet(str(tmp_path / "b"))

    def query():
        a, b = (spark.read.parquet(str(tmp_path / t)) for t in "ab")
        counts = a.groupBy("k").agg(F.count("*").alias("n")).localCheckpoint()
        ranked = counts.join(b, "k").withColumn("r", F.row_number().over(Window.partitionBy("v").orderBy("n")))
        both = ranked.join(a.groupBy("k").agg(F.max("id").alias("top")), "k", "full_outer")
        per_k = both.unionByName(both.where("r = 1")).groupBy("k").agg(
            F.sum("top").alias("top"), F.countDistinct("v").alias("vs"))
        return per_k.crossJoin(per_k.agg(F.sum("vs").alias("all_vs"))).orderBy(F.desc("k"))

    def plan(df) -> str:
        return str(df._jdf.queryExecution().executedPlan())

    # every k of b has a count but 7-9; each row is its v's first: the union doubles it
    expected = [(k, 2 * max(range(k, 500, 7)), 1, 7) for k in reversed(range(7))]
    try:
        size_to_run(spark, 10)
        small = query()
        assert not SHUFFLE.findall(plan(small)), plan(small)
        assert plan(small).count("Coalesce 1") >= 6, plan(small)
        assert [tuple(r) for r in small.collect()] == expected
        spark.conf.set("spark.sql.adaptive.enabled", "true")  # its exchanges are query stages: Spark's
        assert [tuple(r) for r in query().collect()] == expected
        size_to_run(spark, 10**9)
        big = query()
        assert len(SHUFFLE.findall(plan(big))) >= 6, plan(big)
        assert [tuple(r) for r in big.collect()] == expected
    finally:
        size_to_run(spark, 0)  # back to the session fixture's sizing (tests/conftest.py)
