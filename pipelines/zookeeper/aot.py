"""Ahead-of-time build of the snapshot kernels (see :mod:`pipelines.zookeeper.native`):
the functions of :mod:`pipelines.zookeeper.kernels`, compiled by ``numba.pycc`` with one
signature each, into the extension module ``kaudit_zk_kernels`` plus its source stamp.

    python -m pipelines.zookeeper.aot [DIR]      (default: the venv's site-packages)

Array arguments are typed read-only C-contiguous (callers pass views of Arrow buffers and
of the snapshot bytes); string spans (starts, lengths) are int64.
Every kernel releases the GIL while it runs; the build itself is :meth:`pipelines.aot.Kernels.build`.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.zookeeper.native import KERNELS


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
        "txn_ok": t.boolean(u1, t.int64, t.int64, ro(t.int8, 2), t.int64),
        "walk_log": t.UniTuple(t.int64, 2)(u1, t.int64, ro(t.int8, 2), t.int64, t.Array(t.int64, 2, "C")),
    }


def build(out_dir: Path) -> Path:
    return KERNELS.build(out_dir, signatures())


if __name__ == "__main__":
    KERNELS.main(signatures)
