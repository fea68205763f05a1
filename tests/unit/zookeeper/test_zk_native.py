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
    aot = native.KERNELS.aot_module()
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
    a = aot.walk_nodes(arr, pos, tables.CRC_TABLES8, tables.ZK_PREFIX)
    j = jit.walk_nodes(arr, pos, tables.CRC_TABLES8, tables.ZK_PREFIX)
    assert a[0] == j[0] and a[0][0] == tables.OK and a[0][2] > 3
    n = a[0][2]
    for x, y in zip(a[1:], j[1:], strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y) and len(x) == n
    # the parts of the walk the reader calls itself: the digests in two ranges (two threads)
    cols = np.empty((5, aot.locate_capacity(len(arr), pos)), np.int64)
    status = aot.locate_nodes(arr, pos, cols)
    assert status == a[0]
    located = [col[:n] for col in cols]
    assert all(np.array_equal(x, y) for x, y in zip(located, a[1:6], strict=True))
    digest = np.empty(n, np.uint32)
    for lo, hi in ((0, n // 2), (n // 2, n)):
        aot.node_digests(arr, *located, tables.CRC_TABLES8, tables.ZK_PREFIX, lo, hi, digest)
    assert np.array_equal(digest, a[6])
    a = a[1:]  # the columns, as below
    alive = np.ones(n, np.bool_)
    assert aot.tree_digest(a[-1], alive) == jit.tree_digest(j[-1], alive)

    # paths as Arrow offsets/values, shuffled: parents, sort and gather agree
    lens = a[1].astype(np.int64)
    offsets, values, nulls = aot.take_spans(arr, a[0], lens, np.arange(n, dtype=np.int64))
    check = jit.take_spans(arr, a[0], lens, np.arange(n, dtype=np.int64))
    assert nulls == check[2] == 0 and np.array_equal(offsets, check[0]) and np.array_equal(values, check[1])
    shuffled = np.random.default_rng(5).permutation(n).astype(np.int64)
    data_lens = a[3].astype(np.int64)  # null data: -1
    for x, y in zip(aot.take_spans(arr, a[2], data_lens, shuffled), jit.take_spans(arr, a[2], data_lens, shuffled),
                    strict=True):
        assert np.array_equal(x, y)
    starts = offsets[:-1].copy()
    plen, check_plen = np.empty(n, np.int64), np.empty(n, np.int64)
    aot.parent_lengths(values, starts, lens, plen)
    jit.parent_lengths(values, starts, lens, check_plen)
    assert np.array_equal(plen, check_plen)
    pa_, pj = np.empty(n, np.int64), np.empty(n, np.int64)
    assert aot.preorder_parents(values, starts, lens, plen, pa_)
    assert jit.preorder_parents(values, starts, lens, plen, pj)
    assert np.array_equal(pa_, pj)
    rows = np.random.default_rng(3).permutation(n).astype(np.int64)
    for x, y in zip(aot.decode_stats(arr, a[4], rows), jit.decode_stats(arr, a[4], rows), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    children = np.random.default_rng(4).integers(0, 5, n).astype(np.int32)
    (la, ia), (lj, ij) = aot.decode_stats(arr, a[4], rows), jit.decode_stats(arr, a[4], rows)
    assert np.array_equal(aot.client_stats(la, ia, children, data_lens, rows),
                          jit.client_stats(lj, ij, children, data_lens, rows))
    assert np.array_equal(la, lj)  # the owners, as the client sees them
    order = aot.sort_strings(values, starts, lens, rows)
    assert np.array_equal(order, jit.sort_strings(values, starts, lens, rows))
    # resumed in steps of 3 rows: every step leaves a final prefix of the same order
    resumed = rows.copy()
    scratch = (np.empty(n, np.uint64), np.empty(n, np.int64), np.empty(n, np.uint64))
    stack, top, final = aot.sort_stack(n), 1, 0
    while top:
        top = aot.sort_strings_until(values, starts, lens, resumed, *scratch, stack, top, final + 3)
        final = int(stack[top - 1, 0]) if top else n
        assert np.array_equal(resumed[:final], order[:final])
    prefix = np.frombuffer(b"/zookeeper", np.uint8)
    mask = aot.subtree_mask(values, starts, lens, prefix)
    assert np.array_equal(mask, jit.subtree_mask(values, starts, lens, prefix))
    paths = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(values)])
    system = [p == "/zookeeper" or p.startswith("/zookeeper/") for p in paths.to_pylist()]
    assert mask.tolist() == system and any(system)
    assert paths.take(pa.array(order)).to_pylist() == sorted(paths.to_pylist())


def test_a_build_from_other_sources_is_not_used(kernel_pair):
    assert native.KERNELS.aot_module("0" * 64) is None


def test_the_aot_build_can_still_release_the_gil():
    """``pipelines.aot._release_gil`` makes ``numba.pycc`` compile its exports with ``release_gil`` by
    replacing the ``Flags`` class its compiler module instantiates (pycc has no option for it).
    Fails loudly when a numba release changes what that relies on (numba is not pinned to one
    version): the class pycc builds its flags from, and the flag itself."""
    import inspect
    import warnings

    from numba.core.compiler import Flags

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc announces its own deprecation (aot.py does the same)
        from numba.pycc import compiler

    assert "flags = Flags()" in inspect.getsource(compiler), "numba.pycc no longer builds its flags from Flags()"
    assert compiler.Flags is Flags or issubclass(compiler.Flags, Flags)
    flags = Flags()
    assert flags.release_gil is False
    flags.release_gil = True
    assert flags.release_gil is True


@pytest.mark.parametrize("name", ["invalidsnap/version-2/log.274", "invalidsnap/version-2/log.42",
                                  "digest-3.6/version-2/log.1"])
def test_aot_log_walk_equals_jit_on_real_logs(kernel_pair, real_fixtures, name):
    """The framing walk of real logs (log.42 has a CRC mismatch at its second entry): the same
    entries, in chunks too, and the same check of each txn."""
    from pipelines.zookeeper.txnlog import BODY_TABLE, decode_txn

    aot, jit = kernel_pair
    buf = (real_fixtures / "zookeeper" / name).read_bytes()
    arr = np.frombuffer(buf, np.uint8)
    walks = []
    for k in (aot, jit):
        for width in (1 << 12, 2):
            out, pos, got = np.empty((3, width), np.int64), 16, []
            while True:
                count, pos = k.walk_log(arr, pos, *BODY_TABLE, out)
                got.append(out[:, :count].copy())
                if count < width:
                    break
            walks.append((np.concatenate(got, axis=1), pos))
    (entries, stop), *others = walks
    assert entries.shape[1] > 0 and all(np.array_equal(e, entries) and p == stop for e, p in others)
    for at, length, zxid in entries.T:
        assert aot.txn_ok(arr, at + 12, length, *BODY_TABLE) and jit.txn_ok(arr, at + 12, length, *BODY_TABLE)
        assert decode_txn(buf[at + 12 : at + 12 + length], name, at).zxid == zxid
