"""Ahead-of-time build of the Kafka byte-walk kernels (see :mod:`pipelines.kafka.native`):
the kernels the segment decoder calls, compiled by ``numba.pycc`` with one signature each
(those the JIT compiles for a run), into the extension module ``kaudit_kafka_kernels`` plus its
source stamp.

    python -m pipelines.kafka.aot [DIR]      (default: the venv's site-packages)

Byte arrays are typed read-only C-contiguous (a segment's private map, or bytes); spans,
op tables and CRC tables int64. Every kernel releases the GIL while it runs.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.kafka.native import KERNELS


def signatures() -> dict:
    from numba import types as t

    def ro(dtype, ndim=1):
        return t.Array(dtype, ndim, "C", readonly=True)

    def out(dtype, ndim=1, layout="C"):
        return t.Array(dtype, ndim, layout)

    u1, i8 = ro(t.uint8), ro(t.int64)
    i64, table = out(t.int64), out(t.int64, 2, "F")
    return {
        "scan_batches": out(t.int64, 2)(u1, t.boolean, ro(t.int64, 2), ro(t.int64, 2), t.int64, t.int64, t.boolean),
        "walk_records": t.Tuple((out(t.int64, 2, "A"), i64, i64))(u1, ro(t.int64, 2), ro(t.int64, 2)),
        "decode_flat": t.Tuple((i64, table, table, table, i64))(u1, i8, i8, ro(t.int64, 3), i8, t.int64, t.int64),
        "gather_strings": t.Tuple((i64, out(t.uint8)))(u1, i8, i8),
        "dictionary_spans": t.Tuple((out(t.int32), i64, out(t.uint8)))(u1, i8, i8),
    }


def build(out_dir: Path) -> Path:
    return KERNELS.build(out_dir, signatures())


if __name__ == "__main__":
    KERNELS.main(signatures)
