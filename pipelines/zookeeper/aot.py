"""Ahead-of-time build of the snapshot kernels (see :mod:`pipelines.zookeeper.native`):
the functions of :mod:`pipelines.zookeeper.kernels`, compiled by ``numba.pycc`` with one
signature each, into the extension module ``kaudit_zk_kernels`` plus its source stamp.

    python -m pipelines.zookeeper.aot [DIR]      (default: the venv's site-packages)

Array arguments are typed read-only C-contiguous (callers pass views of Arrow buffers and
of the snapshot bytes); string spans (starts, lengths) and ``gather``'s lengths are int64.
Every kernel releases the GIL while it runs (:func:`_release_gil`).
The code is generated for the build machine's CPU (``make`` builds it where it runs).
"""

from __future__ import annotations

import sys
import sysconfig
import warnings
from pathlib import Path

from pipelines.zookeeper.native import AOT_MODULE, source_hash, stamp_path


def signatures() -> dict:
    from numba import types as t

    def ro(dtype, ndim=1):
        return t.Array(dtype, ndim, "C", readonly=True)

    def out(dtype):
        return t.Array(dtype, 1, "C")

    u1, i8 = ro(t.uint8), ro(t.int64)
    i64 = out(t.int64)
    stack = t.Array(t.int64, 2, "C")
    status = t.UniTuple(t.int64, 5)
    return {
        "walk_nodes": t.Tuple((status, i64, i64, i64, i64, i64, out(t.uint32)))(u1, t.int64, ro(t.uint32, 2), u1),
        "locate_nodes": status(u1, t.int64, t.Array(t.int64, 2, "C")),
        "locate_capacity": t.int64(t.int64, t.int64),
        "node_digests": t.none(u1, i8, i8, i8, i8, i8, ro(t.uint32, 2), u1, t.int64, t.int64, out(t.uint32)),
        "take_spans": t.Tuple((i64, out(t.uint8), t.int64))(u1, i8, i8, i8),
        "decode_stats": t.Tuple((t.Array(t.int64, 2, "C"), t.Array(t.int32, 2, "C")))(u1, i8, i8),
        "client_stats": t.Array(t.int32, 2, "C")(t.Array(t.int64, 2, "C"), ro(t.int32, 2), ro(t.int32), i8, i8),
        "tree_digest": t.int64(ro(t.uint32), ro(t.boolean)),
        "parent_lengths": t.none(u1, i8, i8, i64),
        "preorder_parents": t.boolean(u1, i8, i8, i8, i64),
        "sort_strings": i64(u1, i8, i8, i8),
        "sort_stack": stack(t.int64),
        "sort_strings_until": t.int64(u1, i8, i8, i64, out(t.uint64), i64, out(t.uint64), stack, t.int64, t.int64),
        "subtree_mask": out(t.boolean)(u1, i8, i8, u1),
    }


def build(out_dir: Path) -> Path:
    from numba.pycc import CC

    from pipelines.zookeeper import kernels

    out_dir.mkdir(parents=True, exist_ok=True)
    digest = source_hash()
    _release_gil()
    cc = CC(AOT_MODULE)
    cc.output_dir = str(out_dir)
    cc.verbose = False
    cc.target_cpu = _host_cpu()
    for name, sig in signatures().items():
        cc.export(name, sig)(getattr(kernels, name).py_func)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc announces its own deprecation
        cc.compile()
    built = out_dir / (AOT_MODULE + sysconfig.get_config_var("EXT_SUFFIX"))
    stamp_path(built).write_text(digest + "\n")
    return built


def _release_gil() -> None:
    """Make ``numba.pycc`` build wrappers that release the GIL around each kernel (as
    ``@njit(nogil=True)`` does for the JIT): it compiles every export with a plain
    ``Flags()``, and takes no option for it. The kernels touch no Python object, so two
    threads run them on two cores (the snapshot's node digests, the path sort ahead of the
    gathering)."""
    from numba.core.compiler import Flags
    from numba.pycc import compiler

    class NoGil(Flags):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = NoGil


def _host_cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


def main(argv: list[str]) -> None:
    out_dir = Path(argv[0]) if argv else Path(sysconfig.get_paths()["platlib"])
    try:
        built = build(out_dir)
    except Exception as err:  # noqa: BLE001 - no C compiler, no Python headers, ...: the JIT still works
        print(f"kaudit_zk_kernels not built ({type(err).__name__}: {err}); numba's JIT will be used")
        return
    print(f"built {built}")


if __name__ == "__main__":
    main(sys.argv[1:])
