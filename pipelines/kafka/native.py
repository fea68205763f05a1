"""Which build of the Kafka byte-walk kernels (:mod:`pipelines.kafka.kernels`) a run calls:
the ahead-of-time build ``kaudit_kafka_kernels`` when installed and current, else numba's JIT
(:mod:`pipelines.aot`; :mod:`pipelines.kafka.aot` builds it).

``kaudit extract offsets`` and ``extract log-end`` are short processes, where the JIT's start-up
shows: it cost ``extract offsets`` 0.8-0.9 CPU s in the parent before the first worker started
(importing numba 0.3 s; loading the kernels from its cache 0.5-0.6 s, nearly all of it the CPU
target's registries) against about a millisecond for the extension module
(``benchmarks/bench_offsets.py``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from pipelines.aot import Kernels

AOT_MODULE = "kaudit_kafka_kernels"
SOURCES = ("kernels.py", "kernel_tables.py", "aot.py")  # aot.py: the signatures
EXPORTS = ("scan_batches", "walk_records", "decode_flat", "gather_strings", "dictionary_spans")
KERNELS = Kernels(AOT_MODULE, "pipelines.kafka.kernels", Path(__file__).resolve().parent, SOURCES, EXPORTS)


def kernels() -> ModuleType:
    return KERNELS.load()
