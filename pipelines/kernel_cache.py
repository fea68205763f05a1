"""Compile the Kafka and KRaft numba kernels into numba's on-disk cache, at install.

    python -m pipelines.kernel_cache

The kernels of :mod:`pipelines.kafka.kernels` and :mod:`pipelines.kraft.kernels` are
``@njit(cache=True)``: the first process that calls one compiles it (LLVM) and stores the
machine code next to the source (``__pycache__/*.nbi|*.nbc``); every later process loads it.
Compiling them took 23.9 s of ``kaudit extract offsets`` and 5.9 s of ``extract kraft`` in the
first ``kaudit demo`` after an install (0.8 s and 0.1 s once cached). ``make`` runs this module
once per change of the kernel sources (the Makefile's ``$(KERNEL_CACHE)``), so no user run
compiles: it runs the extract steps themselves (one process, one worker) over the demo's
segments and KRaft metadata log (``pipelines/demo/data``) and a segment of one commit and one
group record (:func:`pipelines.kafka.segment.warm_up`), which call every kernel with the
argument types of a real run. numba keys its cache by the source files' modification times:
a changed kernel module compiles again (here, or in the first run that meets it).

The ZooKeeper kernels and the Kafka byte-walk kernels are also built ahead of time
(:mod:`pipelines.zookeeper.aot`, :mod:`pipelines.kafka.aot`; ``make`` builds them first): where
that build is current the extract steps call it, and this cache serves the KRaft kernels and
the JIT fallback.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

DEMO_DATA = Path(__file__).resolve().parent / "demo" / "data"


def warm() -> None:
    """Run every Kafka and KRaft kernel once on the demo data (results discarded)."""
    from pipelines import steps
    from pipelines.context import RunContext
    from pipelines.kafka.segment import warm_up
    from pipelines.warehouse.warehouse import Warehouse

    warm_up()
    with tempfile.TemporaryDirectory(prefix="kaudit-kernel-cache-") as tmp:
        ctx = RunContext(Warehouse(tmp), "kernel-cache", quiet=True)
        for cluster in (DEMO_DATA / "kafka-logs", DEMO_DATA / "kraft" / "kafka-logs"):
            steps.extract_offsets(ctx, paths=[cluster], workers=1)
            steps.extract_log_end(ctx, paths=[cluster])
        steps.extract_kraft(ctx, paths=[DEMO_DATA / "kraft" / "metadata"])


def main() -> None:
    t = time.perf_counter()
    warm()
    print(f"Kafka and KRaft kernels compiled into numba's cache ({time.perf_counter() - t:.1f}s)", file=sys.stderr)


if __name__ == "__main__":
    main()
