"""kaudit's ``file:`` scheme (``pipelines/spark/NioLocalFileSystem.java``): Hadoop's local file
system with permissions set in-process, to the same mode bits as Hadoop's own."""

from __future__ import annotations

import os
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
    from pipelines.spark.local_fs import CLASS, JAR

    assert JAR.is_file(), "make builds it (pipelines.spark.local_fs)"
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
    from pipelines.spark.local_fs import CLASS

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
    from pipelines.spark.local_fs import CLASS, settings

    jar = tmp_path / "k.jar"
    assert settings({}, jar) == {}  # no jar, nothing changes
    jar.write_bytes(b"")
    assert settings({}, jar) == {"spark.driver.extraClassPath": str(jar), "spark.hadoop.fs.file.impl": CLASS}
    theirs = settings({"spark.driver.extraClassPath": "/x.jar"}, jar)
    assert theirs["spark.driver.extraClassPath"] == f"{jar}{os.pathsep}/x.jar"
    assert settings({"spark.hadoop.fs.file.impl": "org.example.Fs"}, jar) == {}
