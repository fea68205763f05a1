"""Which build of the snapshot kernels (:mod:`pipelines.zookeeper.kernels`) a run calls:
the ahead-of-time build ``kaudit_zk_kernels`` when installed and current, else numba's JIT
(:mod:`pipelines.aot`; :mod:`pipelines.zookeeper.aot` builds it).

``kaudit extract zk-snapshot`` is a short process, where the JIT's start-up shows
(``benchmarks/bench_kernels.py``): with the AOT build a small snapshot is read in a fraction of
the time the JIT takes even with a warm cache, and far faster than with a cold one.

Both builds release the GIL while a kernel runs (``@njit(nogil=True)``; the AOT build's
wrappers are compiled with ``release_gil``, :func:`pipelines.aot._release_gil`), so
``kaudit extract zk-snapshot`` digests the two halves of a snapshot on two threads and sorts
the paths on one thread while another gathers the sorted rows and a third encodes them.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from pipelines.aot import Kernels

AOT_MODULE = "kaudit_zk_kernels"
SOURCES = ("kernels.py", "kernel_tables.py", "aot.py")  # aot.py: the signatures
EXPORTS = ("walk_nodes", "locate_nodes", "locate_capacity", "node_digests", "take_spans", "decode_stats",
           "client_stats", "tree_digest", "parent_lengths", "preorder_parents", "sort_strings", "sort_stack",
           "sort_strings_until", "subtree_mask", "txn_ok", "walk_log")
KERNELS = Kernels(AOT_MODULE, "pipelines.zookeeper.kernels", Path(__file__).resolve().parent, SOURCES, EXPORTS)


def kernels() -> ModuleType:
    return KERNELS.load()
