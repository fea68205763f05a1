"""Independent chains of Spark actions run side by side from driver threads.

Why: the build is a few long scans next to chains of short jobs (planning, a broadcast, a
small write: about a second each, mostly on one core). Run one after the other, a core idles
through every short job. Submitted from threads of their own, in scheduler pools of their own
(``spark.scheduler.mode`` FAIR, see :mod:`pipelines.spark.session`), the chains share the
cores: the scans fill whatever the short jobs leave.

Each chain runs in a :class:`pyspark.InheritableThread` (the Python thread pinned to a JVM
thread, which inherits the caller's local properties) with the block's job tag. Leaving the
``with`` block waits for every chain and raises the first error nobody asked
:meth:`Chain.result` for. When the block raised, or a chain failed, the running jobs of the
others are cancelled first: nothing keeps writing into a transaction being rolled back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Self

from pyspark import InheritableThread
from pyspark.sql import SparkSession


class Chain:
    """One submitted chain: :meth:`result` waits for it and returns (or raises) its outcome."""

    def __init__(self, spark: SparkSession, pool: str, tag: str, fn: Callable[..., Any], args: tuple):
        self._value: Any = None
        self._error: BaseException | None = None
        self.asked = False  # result() was called: its error, if any, went to that caller

        def run() -> None:
            sc = spark.sparkContext
            sc.setLocalProperty("spark.scheduler.pool", pool)
            sc.addJobTag(tag)
            try:
                self._value = fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to the caller by result()
                self._error = e

        self._thread = InheritableThread(target=run, name=f"kaudit-{pool}", daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def error(self) -> BaseException | None:
        return self._error

    def result(self) -> Any:
        self.asked = True
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


class Concurrent:
    """``with Concurrent(spark) as side: chain = side.submit("pool", fn, *args)``."""

    def __init__(self, spark: SparkSession):
        self._spark = spark
        self._tag = f"kaudit-{uuid.uuid4().hex[:12]}"
        self._chains: list[Chain] = []

    def submit(self, pool: str, fn: Callable[..., Any], *args: Any) -> Chain:
        chain = Chain(self._spark, pool, self._tag, fn, args)
        self._chains.append(chain)
        return chain

    def __enter__(self) -> Self:
        return self

    def _cancel(self) -> None:
        while any(c.alive() for c in self._chains):
            self._spark.sparkContext.cancelJobsWithTag(self._tag)
            for chain in self._chains:
                chain.join(0.2)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._cancel()
            return
        while True:
            failed = [c for c in self._chains if not c.alive() and c.error is not None and not c.asked]
            if failed:
                self._cancel()
                raise failed[0].error
            running = [c for c in self._chains if c.alive()]
            if not running:
                return
            running[0].join(0.2)
