"""The ahead-of-time build of the Kafka byte-walk kernels (``make`` installs it) decodes
exactly what numba's JIT of the same source decodes: the demo's ``__consumer_offsets``
segments (ZooKeeper-era and KRaft clusters), whole and damaged; a build from other sources
is not used."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from pipelines.kafka import native
from pipelines.kafka.segment import decode_segment, read_bytes

DEMO = Path(__file__).resolve().parents[3] / "pipelines" / "demo" / "data"
SEGMENTS = sorted(DEMO.glob("**/__consumer_offsets-*/*.log"))


@pytest.fixture(scope="module")
def kernel_pair():
    aot = native.KERNELS.aot_module()
    if aot is None:
        pytest.skip("kaudit_kafka_kernels is not built (make builds it)")
    from pipelines.kafka import kernels as jit

    return aot, jit


def _decode(monkeypatch, impl, path: Path, data: np.ndarray):
    monkeypatch.setattr(native.KERNELS, "_impl", impl)
    r = decode_segment(path, 0, data.copy())
    return r.tables, r.stats, (r.marker_offset, r.marker_producer, r.marker_commit)


def _damaged(data: np.ndarray, seed: int) -> np.ndarray:
    rng = random.Random(seed)
    out = data.copy()
    for _ in range(3):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return out[: rng.randrange(len(out) // 2, len(out))]


@pytest.mark.parametrize("seed", [None, 1, 2])
def test_aot_kernels_equal_jit_on_the_demo_segments(kernel_pair, monkeypatch, seed):
    aot, jit = kernel_pair
    assert SEGMENTS
    for path in SEGMENTS:
        data = read_bytes(path)
        if seed is not None:
            data = _damaged(data, seed)
        tables_a, stats_a, markers_a = _decode(monkeypatch, aot, path, data)
        tables_j, stats_j, markers_j = _decode(monkeypatch, jit, path, data)
        assert stats_a == stats_j
        for a, j in zip(markers_a, markers_j, strict=True):
            assert np.array_equal(a, j)
        assert tables_a.keys() == tables_j.keys()
        for name in tables_a:
            assert tables_a[name].equals(tables_j[name]), (path, name)


def test_a_build_from_other_sources_is_not_used(kernel_pair):
    assert native.KERNELS.aot_module("0" * 64) is None
