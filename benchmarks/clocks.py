"""What the benchmarks share: a wall + CPU :class:`Clock`, the median of runs, the line that
prints a side's runs, the ratio of two sides, the load average, and the best of N calls. Imported by the
scripts as ``clocks`` (``python benchmarks/bench_x.py`` puts this folder on ``sys.path``)."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from pathlib import Path


class Clock:
    """Wall and CPU seconds of the blocks timed with it; CPU counts this process and its
    children (the Spark JVM), from /proc (0 where there is no /proc)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    @staticmethod
    def _cpu() -> float:
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat.parent.name == str(os.getpid()) or fields[1] == str(os.getpid()):
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    @contextlib.contextmanager
    def timing(self):
        wall, cpu = time.perf_counter(), self._cpu()
        yield
        self.wall += time.perf_counter() - wall
        self.cpu += self._cpu() - cpu


def median(clocks: list[Clock], what: str = "wall") -> float:
    """The median ``wall`` (or ``cpu``) seconds of ``clocks``."""
    return statistics.median(getattr(c, what) for c in clocks)


def runs(clocks: list[Clock]) -> str:
    """``median Ws of w1, w2, ...; CPU median Cs``: one side's runs."""
    walls = ", ".join(f"{c.wall:.1f}" for c in clocks)
    return f"median {median(clocks):.1f}s of {walls}; CPU median {median(clocks, 'cpu'):.0f}s"


def ratio(side: list[Clock], base: list[Clock]) -> str:
    """``ratio Rx (CPU Cx)``: the medians of ``side`` over those of ``base``, wall and CPU."""
    return f"ratio {median(side) / median(base):.2f}x (CPU {median(side, 'cpu') / median(base, 'cpu'):.2f}x)"


def load() -> str:
    """``load 1m 5m 15m``: the load average now."""
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def best(fn, repeat: int = 1) -> tuple[float, object]:
    """(the fewest wall seconds of ``repeat`` calls of ``fn()``, the last call's result)."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def timed(fn, *args) -> tuple[float, object]:
    """(wall seconds, result) of one call ``fn(*args)``."""
    return best(lambda: fn(*args))
