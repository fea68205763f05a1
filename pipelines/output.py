"""How kaudit speaks: short lines on stderr; progress bars on a terminal, plain progress lines in
a log (CI, Airflow, a pipe), never wrapped at 80 columns.

On a terminal, :func:`progress` is rich's live progress bar. Anywhere else it is
:class:`LineProgress`: the same calls (``add_task``, ``advance``, ``update``), printed as plain
lines when a task starts and ends, and at least every :data:`INTERVAL` seconds while one runs
(with the running Spark stage when there is one), so a log never goes silent on a long step.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

INTERVAL = 10.0  # seconds between progress lines in a log


def make_console() -> Console:
    """stderr; soft-wrapped (no hard line breaks) when it is not a terminal."""
    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=True, highlight=False, soft_wrap=True, width=10_000)
    return console


def progress(console: Console | None, quiet: bool):
    """A progress display for a long step (nothing with ``quiet``; ``console`` is only needed
    without it)."""
    if quiet:
        return Silent()
    if not console.is_terminal:
        return LineProgress(console)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


class Silent:
    """The progress calls of :class:`LineProgress`, doing nothing (``--quiet``: rich, ~0.03 s to
    import, is not needed)."""

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc) -> None:
        pass

    def add_task(self, description: str, total: float | None = None, **_: object) -> int:
        return 0

    def advance(self, task_id: int, advance: float = 1) -> None:
        pass

    def update(self, task_id: int, **_: object) -> None:
        pass


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float = 0
    visible: bool = True
    started: float = 0.0
    done: bool = False

    def state(self, now: float) -> str:
        count = f"{self.completed:g}/{self.total:g}" if self.total is not None else f"{self.completed:g}"
        return f"{self.description}: {count} ({now - self.started:.0f} s)"


class LineProgress:
    """rich ``Progress``'s calls as plain lines: see the module docstring."""

    def __init__(self, console: Console, interval: float = INTERVAL):
        self.console = console
        self.interval = interval
        self._tasks: dict[int, _Task] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._last = time.monotonic()
        self._thread = threading.Thread(target=self._tick, name="kaudit-progress", daemon=True)

    def __enter__(self) -> LineProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _print(self, line: str) -> None:
        self.console.print(f"  {line}", markup=False)
        self._last = time.monotonic()

    def add_task(self, description: str, total: float | None = None, **_: object) -> int:
        with self._lock:
            task_id = len(self._tasks)
            self._tasks[task_id] = _Task(description, total, started=time.monotonic())
            return task_id

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(self, task_id: int, *, description: str | None = None, total: float | None = None,
               completed: float | None = None, advance: float | None = None, visible: bool | None = None,
               **_: object) -> None:
        with self._lock:
            task = self._tasks[task_id]
            if description is not None:
                task.description = description
            if total is not None:
                task.total = total
            if completed is not None:
                task.completed = completed
            if advance:
                task.completed += advance
            if visible is not None:
                task.visible = visible
            finished = task.total is not None and task.completed >= task.total
            if (finished or not task.visible) and not task.done:
                task.done = True
                if task.completed:
                    self._print(task.state(time.monotonic()))

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            now = time.monotonic()
            if now - self._last < self.interval:
                continue
            with self._lock:
                running = [t.state(now) for t in self._tasks.values() if t.visible and not t.done]
            if running:
                spark = spark_status()
                self._print("; ".join(running) + (f"; {spark}" if spark else ""))


def spark_status() -> str:
    """The running Spark stages of this process's SparkContext ('' when there is none)."""
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None:
            return ""
        tracker = sc.statusTracker()
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        return ", ".join(f"Spark stage {s.stageId} {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s)
    except Exception:  # noqa: BLE001 - a progress line is never worth a failure
        return ""
