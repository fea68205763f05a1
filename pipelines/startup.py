"""What a ``kaudit`` process does before it imports typer, numpy and pyarrow (:mod:`pipelines.cli`
imports this module first; ``python -m pipelines`` and the ``kaudit`` script alike). A short
command pays for its start: ``kaudit extract zk-snapshot`` of 1M znodes runs ~0.7 s, a third of
it interpreter start and imports (``benchmarks/bench_zk_snapshot.py``).

Only in a ``kaudit`` process (:func:`is_cli`: not when pytest or another program imports the
CLI and calls :func:`pipelines.cli.main`):

- OpenBLAS single-threaded while numpy loads: it starts a BLAS thread pool at import whose
  threads spin on the other core for a while (~0.05 s of CPU per process); kaudit does no
  linear algebra. :func:`ready` puts ``OPENBLAS_NUM_THREADS`` back as it was, so that the
  processes kaudit starts (Spark, dbt) get the environment they had.
- no garbage collection while the modules are imported (the collector walks every object
  made so far, several times over); :func:`ready` moves what the imports made out of its
  sight (``gc.freeze``: module-level objects live as long as the process) and turns it back on.
- the snapshot file of ``kaudit extract zk-snapshot FILE``, mapped on a thread of its own
  while the modules are imported (:mod:`pipelines.zookeeper.prefetch`).
"""

from __future__ import annotations

import gc
import os
import sys

BLAS_THREADS = "OPENBLAS_NUM_THREADS"
_started = False
_blas_before: str | None = None


def is_cli(argv0: str) -> bool:
    """Is this process the ``kaudit`` command (the script, or ``python -m pipelines``)?"""
    return os.path.basename(argv0) == "kaudit" or argv0.endswith(os.path.join("pipelines", "__main__.py"))


def begin(argv: list[str]) -> None:
    """Set up a ``kaudit`` process (``argv``: ``sys.argv``); nothing in any other process."""
    global _started, _blas_before
    if _started or not argv or not is_cli(argv[0]) or "numpy" in sys.modules:
        return
    _started = True
    _blas_before = os.environ.get(BLAS_THREADS)
    os.environ[BLAS_THREADS] = "1"
    gc.disable()
    from pipelines.zookeeper import prefetch

    prefetch.start(argv[1:])


def ready() -> None:
    """The modules are imported: the environment as it was, garbage collection on again."""
    global _started
    if not _started:
        return
    _started = False
    if _blas_before is None:
        os.environ.pop(BLAS_THREADS, None)
    else:
        os.environ[BLAS_THREADS] = _blas_before
    gc.freeze()
    gc.enable()


begin(sys.argv)
