"""What a ``kaudit`` process does before it imports typer, numpy and pyarrow (:mod:`pipelines.cli`
imports this module first; ``python -m pipelines`` and the ``kaudit`` script alike). A short
command pays for its start: ``kaudit extract zk-snapshot`` of 1M znodes runs ~0.7 s, a third of
it interpreter start and imports (``benchmarks/bench_zk_snapshot.py``).

Only in a ``kaudit`` process (:func:`is_cli`: not when pytest or another program imports the
CLI and calls :func:`pipelines.cli.main`):

- OpenBLAS single-threaded while numpy loads: it starts a BLAS thread pool at import whose
  threads spin on the other core for a while (~0.05 s of CPU per process); kaudit does no
  linear algebra.
- no transparent huge pages asked for numpy's arrays (``NUMPY_MADVISE_HUGEPAGE=0``, read as
  numpy loads), unless the user's environment says otherwise. With the kernel's default
  ``defrag=madvise``, a fault in such an array may compact memory first, which made the time
  of ``kaudit extract zk-snapshot`` of 1M znodes vary widely (``bench_zk_snapshot.py``).
- :func:`ready` puts both variables back as they were, so that the processes kaudit starts
  (Spark, dbt) get the environment they had.
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

LOADING = {"OPENBLAS_NUM_THREADS": "1", "NUMPY_MADVISE_HUGEPAGE": "0"}  # while numpy loads (see above)
USER_WINS = {"NUMPY_MADVISE_HUGEPAGE"}  # a value the user set stays
_started = False
_before: dict[str, str | None] = {}


def is_cli(argv0: str) -> bool:
    """Is this process the ``kaudit`` command (the script, or ``python -m pipelines``)?"""
    return os.path.basename(argv0) == "kaudit" or argv0.endswith(os.path.join("pipelines", "__main__.py"))


def begin(argv: list[str]) -> None:
    """Set up a ``kaudit`` process (``argv``: ``sys.argv``); nothing in any other process."""
    global _started
    if _started or not argv or not is_cli(argv[0]) or "numpy" in sys.modules:
        return
    _started = True
    for key, value in LOADING.items():
        _before[key] = os.environ.get(key)
        if not (key in USER_WINS and key in os.environ):
            os.environ[key] = value
    gc.disable()
    from pipelines.zookeeper import prefetch

    prefetch.start(argv[1:])


def ready() -> None:
    """The modules are imported: the environment as it was, garbage collection on again."""
    global _started
    if not _started:
        return
    _started = False
    for key, value in _before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    gc.freeze()
    gc.enable()


begin(sys.argv)
