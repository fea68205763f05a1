"""What every step gets: the warehouse, the run id, where and how Spark and dbt run, how to speak.

The Spark and dbt settings travel here, from the command line or the config file to the steps
(never through the process environment); a spark-submitted job gets them as arguments."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from pipelines.output import make_console
from pipelines.output import progress as make_progress
from pipelines.warehouse.warehouse import Warehouse

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")


def in_background(work: Callable[[], T], name: str) -> Future[T]:
    """``work()`` on a thread of its own (named ``name``), which ends with it."""
    pool = ThreadPoolExecutor(1, thread_name_prefix=name)
    try:
        return pool.submit(work)
    finally:
        pool.shutdown(wait=False)  # nothing else runs on it


@dataclass
class RunContext:
    warehouse: Warehouse
    run_id: str
    spark_master: str | None = None  # None: local[*], or what spark-submit set
    quiet: bool = False
    verbose: bool = False
    spark_conf: dict[str, str] = field(default_factory=dict)  # spark.* properties of every session and spark-submit
    spark_submit: bool | None = None  # None: spark-submit for every non-local master
    dbt_target: str | None = None  # a profiles.yml target; None: session
    console: Console | None = None  # made on first use: with --quiet rich is not imported (~0.03 s)

    def say(self, message: str) -> None:
        """A short, useful line (suppressed by --quiet)."""
        if not self.quiet:
            self.out().print(message)

    def out(self) -> Console:
        """The console the step speaks on."""
        if self.console is None:
            self.console = make_console()
        return self.console

    def spark(self):
        """The step's SparkSession (kaudit's conf, this run's master and ``spark_conf``, code
        generation, planning and a JVM it starts sized to the run's raw rows:
        ``session.size_to_run``, ``session.is_small_run``); Spark's
        own catalog dir lives under the warehouse, never in the cwd, and the JVM's log in
        ``logs/spark.log`` (on stderr with ``--verbose``). A session that already exists is reused,
        its catalog ``kaudit`` bound to this warehouse's (a notebook's or a test worker's session
        serves steps of several warehouses)."""
        from pipelines.spark.session import get_spark, is_small_run, size_to_run
        from pipelines.warehouse.iceberg.catalog import bind_catalog
        from pipelines.warehouse.iceberg.spark import session_conf
        from pipelines.warehouse.reading import run_rows

        catalog = {"spark.sql.warehouse.dir": str(self.warehouse.root / "dbt" / "spark-warehouse")}
        catalog.update(session_conf(self.warehouse))  # its catalog as Spark's catalog ``kaudit``, Iceberg's jars
        log = None if self.verbose else self.warehouse.root / "logs" / "spark.log"
        rows = run_rows(self.warehouse, self.run_id)
        spark = get_spark(self.spark_master, conf={**catalog, **self.spark_conf}, log=log, small=is_small_run(rows))
        bind_catalog(spark, self.warehouse.catalog_config)
        size_to_run(spark, rows)
        return spark

    def start_spark(self) -> Future:
        """:meth:`spark` on a thread, so that the JVM starts while this thread works on (the JVM
        writes to its log, never to this process's stderr); ``result()`` is the session, or
        the error that stopped its start."""
        return in_background(self.spark, "spark-start")

    def progress(self):
        """Progress of a long step: bars on a terminal, plain lines in a log, none with --quiet."""
        return make_progress(None if self.quiet else self.out(), self.quiet)
