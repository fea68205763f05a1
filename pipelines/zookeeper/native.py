"""Which build of the snapshot kernels (:mod:`pipelines.zookeeper.kernels`) a run calls.

numba's JIT costs every new process ~1.3 s before the first kernel runs, even with its
on-disk cache: importing numba, and building its CPU target (which imports scipy.linalg to
probe BLAS). ``kaudit extract zk-snapshot`` is a short process, so ``make`` also compiles
the same kernels ahead of time (:mod:`pipelines.zookeeper.aot`, ``numba.pycc``) into the
extension module ``kaudit_zk_kernels`` in the venv, stamped with a hash of the kernel
sources. :func:`kernels` returns that module when it is installed and built from the
current sources, else the JIT module (identical results, slower start).

``numba.pycc`` is deprecated, and kept while it builds (issue 19, ``benchmarks/bench_kernels.py``):
``kaudit extract zk-snapshot`` of a 56 KB snapshot took 3.0 s with this build against 5.4 s with
the JIT and a warm cache, 48 s cold (load average 24 on 2 CPUs); of a 5 KB one (read up to a
damaged node), 0.45 s against 1.5-2.1 s warm and 2.6 s cold (load 0.5-2); the 56 KB one again on
2026-11-26: 3.6 s against 9.3 s warm and 128 s cold (load 17-28). Should a numba
release drop ``numba.pycc``, ``make`` says so and the JIT (``cache=True``) serves the same kernels.

Both builds release the GIL while a kernel runs (``@njit(nogil=True)``; the AOT build's
wrappers are compiled with ``release_gil``, :func:`pipelines.zookeeper.aot._release_gil`), so
``kaudit extract zk-snapshot`` digests the two halves of a snapshot on two threads and sorts
the paths on one thread while another gathers the sorted rows and a third encodes them.
"""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from types import ModuleType

AOT_MODULE = "kaudit_zk_kernels"
SOURCES = ("kernels.py", "kernel_tables.py", "aot.py")  # aot.py: the signatures
EXPORTS = ("walk_nodes", "locate_nodes", "locate_capacity", "node_digests", "take_spans", "decode_stats",
           "client_stats", "tree_digest", "parent_lengths", "preorder_parents", "sort_strings", "sort_stack",
           "sort_strings_until", "subtree_mask")

_impl: ModuleType | None = None


def source_hash() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()


def stamp_path(module_file: str | Path) -> Path:
    return Path(module_file).with_name(AOT_MODULE + ".sha256")


def aot_module() -> ModuleType | None:
    """The ahead-of-time build, if installed and built from the current sources."""
    try:
        mod = importlib.import_module(AOT_MODULE)
    except ImportError:
        return None
    try:
        current = stamp_path(mod.__file__).read_text().strip() == source_hash()
    except OSError:
        return None
    return mod if current and all(hasattr(mod, name) for name in EXPORTS) else None


def kernels() -> ModuleType:
    global _impl
    if _impl is None:
        _impl = aot_module() or importlib.import_module("pipelines.zookeeper.kernels")
    return _impl
