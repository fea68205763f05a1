"""What every step gets: the warehouse, the run id, where Spark runs, how to speak."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console

from pipelines.warehouse import Warehouse


@dataclass
class RunContext:
    warehouse: Warehouse
    run_id: str
    spark_master: str | None = None  # None: local[*], or what spark-submit set
    quiet: bool = False
    verbose: bool = False
    console: Console = field(default_factory=lambda: Console(stderr=True, highlight=False))

    def say(self, message: str) -> None:
        """A short, useful line (suppressed by --quiet)."""
        if not self.quiet:
            self.console.print(message)

    def spark(self, conf: dict[str, str] | None = None):
        """The step's SparkSession (kaudit's conf, this run's master); Spark's own catalog dir
        lives under the warehouse, never in the cwd. A session that already exists is reused."""
        from pipelines.spark.session import get_spark

        catalog = {"spark.sql.warehouse.dir": str(self.warehouse.root / "dbt" / "spark-warehouse")}
        return get_spark(self.spark_master, conf={**catalog, **(conf or {})})

    def progress(self):
        """A rich progress bar for long steps (disabled by --quiet)."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        return Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            disable=self.quiet,
            transient=True,
        )
