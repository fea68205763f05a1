"""The ahead-of-time build of the snapshot kernels (``make`` installs it) computes exactly
what numba's JIT of the same source computes, on real snapshots; a build from other
sources is not used."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipelines.zookeeper import kernel_tables as tables
from pipelines.zookeeper import native
from pipelines.zookeeper.snapshot import parse, read_bytes

SNAPSHOTS = ["invalidsnap/version-2/snapshot.272", "digest-3.6/version-2/snapshot.3"]


@pytest.fixture(scope="module")
def kernel_pair():
    aot = native.aot_module()
    if aot is None:
        pytest.skip("kaudit_zk_kernels is not built (make builds it)")
    from pipelines.zookeeper import kernels as jit

    return aot, jit


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_aot_kernels_equal_jit_on_real_snapshots(kernel_pair, real_fixtures, name):
    aot, jit = kernel_pair
    path = real_fixtures / "zookeeper" / name
    buf, _ = read_bytes(path)
    arr = np.frombuffer(buf, np.uint8)
    pos = int(parse(path, verify_digest=False).nodes.path_off[0]) - 4  # the first node record
    counted = aot.count_nodes(arr, pos)
    assert counted == jit.count_nodes(arr, pos) and counted[0] == tables.OK and counted[2] > 3
    n = counted[2]
    a = aot.walk_nodes(arr, pos, n, tables.CRC_TABLES8, tables.ZK_PREFIX)
    j = jit.walk_nodes(arr, pos, n, tables.CRC_TABLES8, tables.ZK_PREFIX)
    for x, y in zip(a, j):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    alive = np.ones(n, np.bool_)
    assert aot.tree_digest(a[-1], alive) == jit.tree_digest(j[-1], alive)

    # paths as Arrow offsets/values, shuffled: parents, sort and gather agree
    lens = a[1].astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    values = np.empty(int(offsets[-1]), np.uint8)
    aot.gather(arr, a[0], lens, offsets, values)
    check = np.empty_like(values)
    jit.gather(arr, a[0], lens, offsets, check)
    assert np.array_equal(values, check)
    plen = aot.parent_lengths(offsets, values)
    assert np.array_equal(plen, jit.parent_lengths(offsets, values))
    pa_, ok = aot.preorder_parents(offsets, values, plen)
    pj, okj = jit.preorder_parents(offsets, values, plen)
    assert ok == okj and np.array_equal(pa_, pj)
    rows = np.random.default_rng(3).permutation(n).astype(np.int64)
    order = aot.sort_strings(offsets, values, rows)
    assert np.array_equal(order, jit.sort_strings(offsets, values, rows))
    prefix = np.frombuffer(b"/zookeeper", np.uint8)
    assert np.array_equal(aot.subtree_mask(offsets, values, prefix), jit.subtree_mask(offsets, values, prefix))
    paths = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values)])
    system = [p == "/zookeeper" or p.startswith("/zookeeper/") for p in paths.to_pylist()]
    assert aot.subtree_mask(offsets, values, prefix).tolist() == system and any(system)
    assert paths.take(pa.array(order)).to_pylist() == sorted(paths.to_pylist())


def test_a_build_from_other_sources_is_not_used(kernel_pair, monkeypatch):
    monkeypatch.setattr(native, "source_hash", lambda: "0" * 64)
    assert native.aot_module() is None
