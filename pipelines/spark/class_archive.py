"""The driver JVM's class-data archive (JDK 17 dynamic AppCDS): Spark's classes, parsed and
verified once by ``make``, mapped by every driver JVM kaudit starts itself.

A new JVM loads some 17,000 classes before its first query has run, 11,500 of them from
Spark's jars (the JDK's own come from the JDK's archive). Mapped from this archive instead, a
process that starts a session, runs one aggregate and stops takes about a third less CPU, and
its session starts about 2 s sooner. A demo run with an archive trained on the
whole demo was no faster after the start than with one trained as here: the classes a run
loads later are few against its JIT work.

    python -m pipelines.spark.class_archive     # what `make` runs after an install

``pipelines.spark.session`` maps it (``CLASS_ARCHIVE``) when it starts a driver JVM. The
archive belongs to one JDK and one set of jars: after another JDK or another pyspark the
JVM finds it does not match, says so in its log (a warning, never on stdout) and loads its
classes from the jars as before, until ``make`` builds it again.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from pipelines.spark import session


def _train(spark) -> None:
    """What every kaudit session does first: SQL, DataFrames, a shuffle, a join, a window, an
    Arrow round trip and a Parquet write and read."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.sql(
        "select id, id % 7 as k, cast(id as string) as s, timestamp_millis(id) as t from range(2000)"
    )
    counts = rows.groupBy("k").agg(F.count("*").alias("n"), F.max("t").alias("last"))
    ranked = rows.join(counts, "k").withColumn("r", F.row_number().over(Window.partitionBy("k").orderBy("id")))
    with tempfile.TemporaryDirectory() as tmp:
        ranked.write.parquet(tmp + "/t")
        back = spark.read.parquet(tmp + "/t")
        spark.createDataFrame(back.toArrow()).where("r < 3").count()
        back.createOrReplaceTempView("t")
        spark.sql("select k, collect_list(s) from t group by k union all select 0, array()").collect()


def build(path: Path = session.CLASS_ARCHIVE) -> None:
    """Starts a driver JVM that dumps the classes it loaded into ``path`` when it exits, trains it
    and stops it; the archive appears whole or not at all."""
    from pyspark import SparkContext

    part = path.with_name(path.name + ".part")
    part.unlink(missing_ok=True)
    options = f"{session.driver_java_options(quiet=True, archive=False)} -XX:ArchiveClassesAtExit={part}"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "jvm.log"
        spark = session.get_spark(conf={"spark.driver.extraJavaOptions": options}, log=log)
        _train(spark)
        jvm = SparkContext._gateway.proc
        spark.stop()
        jvm.stdin.close()  # the gateway exits, and the JVM writes the archive on its way out
        if jvm.wait() != 0 or not part.is_file():
            sys.exit(f"no class archive written ({path}): {log.read_text()[-2000:]}")
    os.replace(part, path)


if __name__ == "__main__":
    build()
    print(f"class archive: {session.CLASS_ARCHIVE} ({session.CLASS_ARCHIVE.stat().st_size >> 20} MiB)")
