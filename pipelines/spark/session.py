"""The SparkSession every kaudit Spark step uses (local, spark-submit, or dbt's session)."""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from pipelines.procs import inside_spark_submit
from pipelines.spark import jar

# Settings the warehouse contract depends on: UTC, timestamp[ms] in Parquet, string run ids.
CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MILLIS",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.legacy.parquet.nanosAsLong": "false",
    # the build runs independent chains of jobs side by side (pipelines.spark.concurrent)
    "spark.scheduler.mode": "FAIR",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # generated classes kept for reuse: the build alone has 105 distinct whole-stage and
    # projection sources, over the default 100, so every later build recompiled all of them
    # (least recently used out first: 131 Janino compiles and their JIT in a warm 20k-group
    # build; none with room for them)
    "spark.sql.codegen.cache.maxEntries": "1000",
    # PySpark's DataFrame debugging records the Python call site of every Column function (a
    # Python stack walk and 6-8 more py4j round trips each): 107,752 -> 61,561 round trips
    # in the demo's two runs, the core builds 22.6 -> 21.5 s and 11.2 -> 9.6 s (idle). Errors
    # lose the PySpark line in Spark's message, not the message.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # Tungsten pages of 2 MiB: by default a page is sized from memory per core (32 MiB with a
    # 4 GiB driver on 2 cores), and every sort, aggregation and hashed broadcast of even a few
    # rows takes one: 24 of the 64 old objects JFR sampled in the demo were such pages, its
    # heap held 1.1-1.4 GiB after full collections and GC stopped it for 4.4 s (53 young, 7
    # full); with 2 MiB: 0.3 GiB, 1.6 s (24 young, 3-4 full). A page per record bigger than
    # this is still taken whole; 2 MiB x Spark's 8,192 pages per task is 16 GiB a task.
    "spark.buffer.pageSize": "2m",
}
# Code generation (whole-stage, and Janino classes for expressions) compiles Java for every
# distinct plan and then waits for the JIT: worth it when a query reads many rows, overhead when
# every query is new to the JVM and reads a few thousand. A run whose raw tables hold fewer rows
# than SMALL_RUN_ROWS is evaluated by Spark's interpreted operators instead: on
# bench_assignment's clusters a new JVM's core build of 52k rows takes half the CPU interpreted,
# while from about 200k rows on compiled code wins; the demo's two runs take less CPU and time.
# The same runs' queries are planned statically, their exchanges into one partition: Spark's
# fixed cost per query is most of such a run's build (a warm JVM, one aggregation of 5,000
# rows: 113 ms of JVM CPU with adaptive execution and 8 shuffle partitions, 97 ms with one
# partition, 90 ms planned statically with one). Adaptive execution runs every exchange as a
# job of its own and has nothing to adapt on a few thousand rows; with 8 partitions each map
# task writes 8 shuffle files: the demo's dbt builds run less than half the Spark jobs.
# Even into one partition an exchange writes its input to shuffle files in a stage of its own:
# on a small run (``one_partition``) kaudit's session extension (``OnePartition.java``, in the
# jar of ``pipelines.spark.jar``) coalesces instead, in the same stage. The demo's ZooKeeper run,
# against its frames coalesced as they were read (0.1.16): core build 114 -> 60 stages, dbt
# build 194 -> 102 stages and 245 -> 120 tasks, 14.8 -> 13.2-13.7 CPU s.
SMALL_RUN_ROWS = 100_000
SIZED = {  # runtime settings, key: (big run, small run)
    "spark.sql.codegen.wholeStage": ("true", "false"),
    "spark.sql.codegen.factoryMode": ("FALLBACK", "NO_CODEGEN"),
    "spark.sql.adaptive.enabled": ("true", "false"),
    "spark.sql.shuffle.partitions": ("8", "1"),
    "spark.kaudit.onePartition": ("false", "true"),  # (see one_partition)
}


def one_partition(spark: SparkSession) -> bool:
    """The session is sized for a small run (``SIZED``): its exchanges into one partition are
    coalesces (``OnePartition.java``), its build computes the history on its own chains."""
    return spark.conf.get("spark.kaudit.onePartition", "false") == "true"


def is_small_run(rows: int) -> bool:
    """A run of ``rows`` raw rows (``pipelines.warehouse.reading.run_rows``) is small: its queries read a
    few thousand rows, its tables fit in the driver."""
    return rows < SMALL_RUN_ROWS


# The keys each SparkContext was started with: its conf no longer changes once it runs, and
# ``SparkContext.getConf()`` copies all of it through py4j (two round trips an entry: 13 ms on
# an idle machine). Copied anew for each key (4 in every ``RunContext.spark``, 30 in the demo),
# it took 2.2 s in all, 0.3 s at the start of each build, the GIL shared with the other run.
_STARTED_WITH: weakref.WeakKeyDictionary[SparkContext, frozenset[str]] = weakref.WeakKeyDictionary()


def _user_set(spark: SparkSession, key: str) -> bool:
    """The session was started with ``key`` (the user's conf: kaudit's ``spark.conf``, or
    spark-submit's ``--conf``): kaudit leaves it as it is."""
    sc = spark.sparkContext
    keys = _STARTED_WITH.get(sc)
    if keys is None:
        keys = _STARTED_WITH[sc] = frozenset(name for name, _ in sc.getConf().getAll())
    return key in keys


def size_to_run(spark: SparkSession, rows: int) -> None:
    """Sets the session's code generation and planning for a run of ``rows`` raw rows (``SIZED``:
    runtime settings, so a session serves a small and a big run in turn). A key the user set is
    left as it is."""
    for key, (big, small) in SIZED.items():
        if not _user_set(spark, key):
            spark.conf.set(key, small if is_small_run(rows) else big)


@contextmanager
def runtime_setting(spark: SparkSession, key: str, value: str) -> Iterator[None]:
    """The session's runtime ``key`` set to ``value`` for the block, its previous value (or
    none) restored after, also on error; a key the user set is left as it is."""
    if _user_set(spark, key):
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)


# A driver kaudit starts itself listens on loopback only. Inside spark-submit the driver's
# address is the cluster's business (its conf, or SPARK_LOCAL_IP): forcing 127.0.0.1 would make
# it unreachable from remote executors.
LOOPBACK_DRIVER = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
# The JVM of a driver kaudit starts itself (in local mode also the executor): the throughput
# collector. Against G1 it cut bench_assignment's build (10.4M znodes) by 8% in CPU and in
# wall time (interleaved, 2 JVMs x 3 builds each: 792 -> 730 CPU-s); a batch job has no use
# for G1's short pauses.
# Its heap: Spark's default 1 GiB was full during the demo's dbt build (the analyzer's plans of
# the history marts, views of unions of views): it spent nearly all its time in full
# collections and never finished. A bigger ceiling only costs what is used.
DRIVER_MEMORY = {"spark.driver.memory": "4g"}
# ... its JIT: C2 inlines less (hot callees up to 50 bytecodes instead of 325, none already
# compiled to over 500 bytes instead of 2500). A kaudit driver plans hundreds of queries, each
# new to the JVM, and C2 compiling Catalyst's rules with everything inlined was its biggest
# thread: the demo's two runs take about a sixth less CPU, C2's share more than halved, and the
# same queries run no slower once compiled (a 2M-znode build, several rounds in one JVM).
JIT = "-XX:FreqInlineSize=50 -XX:InlineSmallCode=500"
# ... or, when it starts for a small run (``is_small_run``: the run's raw rows are known before
# the JVM starts, and a demo's cluster is small), C1 alone: such a run's queries are each new to
# the JVM and read a few thousand rows, so C2's profiling and recompiling cost more than its
# faster code repays: the demo's two runs take less CPU in the JIT threads at the same wall time,
# and a first build of 94k znodes is faster (bench_assignment --groups 900), though later builds
# in the same JVM are slower, so a big run keeps C2. The code
# cache at the size tiered compilation reserves (C1 alone gets 48 MiB, which the demo fills:
# the JIT then stops and the rest runs interpreted).
JIT_SMALL = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
# ... its class metadata: the first full collections at 21 MiB and again at ~40 MiB of metadata
# (two stops of 140 ms each while Spark loads its classes) wait until 128 MiB (the demo: 63 MiB)
METASPACE = "-XX:MetaspaceSize=128m"
# ... its log: errors only (Spark's start-up chatter and WARN lines are gone), when kaudit
# gives it a log file
LOG4J2 = Path(__file__).resolve().with_name("log4j2.properties")
# ... the JVM's own warnings (a class archive that does not match, classes it could not archive)
# on its stderr, which goes to that log: by default the JVM writes them on stdout
JVM_LOG = "-Xlog:disable -Xlog:all=warning:stderr"
# ... and the class-data archive ``make`` builds (pipelines.spark.class_archive): Spark's classes
# parsed and verified once, mapped by every driver JVM kaudit starts itself
CLASS_ARCHIVE = Path(sys.prefix) / "kaudit-spark-classes.jsa"


def driver_java_options(quiet: bool, archive: bool = True, small: bool = False) -> str:
    """``spark.driver.extraJavaOptions`` of a driver JVM kaudit starts: ``quiet`` with the log4j
    settings of a JVM that logs to a file, ``archive`` mapping the class archive when there is
    one, ``small`` with the JIT of a small run."""
    options = ["-XX:+UseParallelGC", JIT_SMALL if small else JIT, METASPACE, JVM_LOG]
    if quiet:
        options.append(f"-Dlog4j2.configurationFile=file:{LOG4J2}")
    if archive and CLASS_ARCHIVE.is_file():
        options.append(f"-XX:SharedArchiveFile={CLASS_ARCHIVE}")
    return " ".join(options)


def driver_settings(quiet: bool, small: bool = False, archive: bool = True) -> dict[str, str]:
    """The settings of a driver JVM kaudit starts on this machine, itself or through
    spark-submit in client mode (:func:`pipelines.cluster.submit_command`): its heap and
    :func:`driver_java_options`."""
    options = driver_java_options(quiet=quiet, archive=archive, small=small)
    return {**DRIVER_MEMORY, "spark.driver.extraJavaOptions": options}


_JVM_START = threading.Lock()


def _start_jvm(settings: dict[str, str], log: Path) -> None:
    """Starts the driver JVM with ``settings`` and its stderr (its own warnings and its log, for
    its whole life) appended to ``log``; this process's stderr is never touched, so a thread can
    start it while another prints."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf(loadDefaults=False).setAll(settings.items())
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as err:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": err})
    SparkContext(conf=conf, gateway=gateway)


def get_spark(
    master: str | None = None, app_name: str = "kaudit", conf: dict[str, str] | None = None, log: Path | None = None,
    small: bool = False,
) -> SparkSession:
    """The active session, or a new one. ``master`` None means what spark-submit set, else local[*].

    ``log``: a JVM this call starts logs errors only, into that file (with its start-up
    warnings); None keeps Spark's default log on this process's stderr. ``small``: a JVM this
    call starts is for a small run (its JIT: ``JIT_SMALL``)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    submitted = not master and inside_spark_submit()
    settings = {"spark.app.name": app_name}
    if master:
        settings["spark.master"] = master
    elif not submitted and "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        settings["spark.master"] = "local[*]"
    own = {} if submitted else {**LOOPBACK_DRIVER, **driver_settings(quiet=log is not None, small=small)}
    # kaudit's jar (its file: scheme, its session extension) before the user's classpath entries
    files = {} if submitted else jar.settings(conf or {})
    settings.update({**CONF, **own, **(conf or {}), **files})
    with _JVM_START:  # one JVM even when two threads ask at once
        if log is not None and SparkContext._gateway is None and not submitted:
            _start_jvm(settings, log)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
