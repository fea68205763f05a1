"""Hand-written kernels against the library that does the same job, on the same data in the
same run (a kernel is kept only where this shows the library is the bottleneck).

- ZooKeeper node digest (``zookeeper/kernels.walk_nodes``: CRC-32 of each node's path, data
  and stat, slice-by-8, in the node walk) vs ``zlib.crc32`` per node from Python (the
  pieces are a few dozen bytes: the calls are the cost);
- ZooKeeper path sort (``zookeeper/kernels.sort_strings``: MSD radix, 8 bytes a digit) vs
  ``pyarrow.compute.sort_indices`` and ``numpy.argsort`` of the same paths;
- Kafka batch CRCs (``kafka/kernels.crc32_slice8``): over random spans the size of
  ``bench_offsets``' batches, in one kernel call vs ``crc32c.crc32c`` / ``zlib.crc32`` per span
  from Python; then in place, the offsets decoder's framing of ``bench_offsets``' segments
  (built once, cached) with the kernel's CRCs vs framed by headers only and ``crc32c.crc32c``
  per batch;
- Kafka string columns (``kafka/kernels.dictionary_spans``): the group/topic spans of
  ``--spans`` records (2,000 distinct names) dictionary-encoded in one kernel pass vs the
  spans gathered into an Arrow string array (``gather_strings``, UTF-8 checked) and
  ``pyarrow``'s ``dictionary_encode``;
- a short ``kaudit extract zk-snapshot`` process with the snapshot kernels built ahead of time
  (``numba.pycc``, ``make``) vs numba's JIT with a warm on-disk cache.

    .venv/bin/python benchmarks/bench_kernels.py [--nodes N] [--spans N] [--records N] [--repeat R]

Each figure is the best of R runs (default 3); ratios are library / kernel (above 1: the
kernel is faster).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
from clocks import best

REPO = Path(__file__).resolve().parents[1]

SNAPSHOT = REPO / "tests" / "fixtures" / "real" / "zookeeper" / "invalidsnap" / "version-2" / "snapshot.272"
# the CLI with the ahead-of-time module hidden: numba's JIT (and its cache) serve the kernels
JIT_CLI = ("import sys\n"
           "class Hide:\n"
           "    def find_spec(self, name, path, target=None):\n"
           "        if name == 'kaudit_zk_kernels': raise ImportError(name)\n"
           "sys.meta_path.insert(0, Hide())\n"
           "from pipelines.cli import main\n"
           "main(sys.argv[1:])\n")


def line(what: str, kernel: float, library: float, name: str) -> None:
    print(f"  {what}: kernel {kernel:.3f} s, {name} {library:.3f} s: {library / kernel:.1f}x")


def node_records(n: int, rng) -> tuple[np.ndarray, list]:
    """``n`` snapshot node records (path, data, acl, stat) and their (path, data, stat) bytes."""
    parts, nodes = [], []
    for i in range(n):
        path = f"/brokers/topics/topic-{i % 5000}/partitions/{i}".encode()
        data = b'{"leader":%d,"isr":[1,2,3]}' % (i % 7) if i % 3 else b""
        stat = rng.integers(0, 256, 60, dtype=np.uint8).tobytes()
        parts += [len(path).to_bytes(4, "big"), path, len(data).to_bytes(4, "big"), data, bytes(8), stat]
        nodes.append((path, data, stat))
    parts += [(1).to_bytes(4, "big"), b"/"]
    return np.frombuffer(b"".join(parts), np.uint8), nodes


def digest_per_node(nodes: list) -> np.ndarray:
    out = np.empty(len(nodes), np.uint32)
    crc = zlib.crc32
    for i, (path, data, s) in enumerate(nodes):
        c = crc(data, crc(path)) if data else crc(path)
        out[i] = crc(s[44:52], crc(s[16:44], crc(s[52:60], crc(s[:16], c))))
    return out


def bench_zookeeper(n: int, repeat: int) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipelines.zookeeper import kernel_tables as tables
    from pipelines.zookeeper.native import kernels
    from pipelines.zookeeper.rows import path_order

    k = kernels()
    print(f"ZooKeeper, {n} nodes ({k.__name__})")
    buf, nodes = node_records(n, np.random.default_rng(1))
    k.walk_nodes(buf[:200], 0, tables.CRC_TABLES8, tables.ZK_PREFIX)
    t_kernel, cols = best(lambda: k.walk_nodes(buf, 0, tables.CRC_TABLES8, tables.ZK_PREFIX), repeat)
    t_lib, digests = best(lambda: digest_per_node(nodes), repeat)
    assert np.array_equal(cols[6], digests), "the kernel's node digests differ from zlib.crc32"
    line("node digests (walk_nodes, whole walk)", t_kernel, t_lib, "zlib.crc32 per node")

    paths = pa.array([p.decode() for p, _, _ in nodes[::-1]], pa.large_string())
    t_kernel, order = best(lambda: path_order(paths), repeat)
    t_arrow, by_arrow = best(lambda: pc.sort_indices(paths).to_numpy(), repeat)
    fixed = np.array(paths.to_pylist(), dtype="S")
    t_numpy, by_numpy = best(lambda: np.argsort(fixed, kind="stable"), repeat)
    assert np.array_equal(order, by_arrow) and np.array_equal(order, by_numpy)
    line("path sort", t_kernel, t_arrow, "pyarrow sort_indices")
    line("path sort", t_kernel, t_numpy, f"numpy argsort (S{fixed.itemsize})")


def bench_kafka(n: int, records: int, repeat: int) -> None:
    import crc32c
    from bench_offsets import build
    from numba import njit

    from pipelines.kafka import kernels as K

    @njit(nogil=True)
    def crc32_spans(table, b, starts, ends):  # what scan_batches does per batch, without the framing
        out = np.empty(starts.shape[0], np.int64)
        for i in range(starts.shape[0]):
            out[i] = K.crc32_slice8(table, b, starts[i], ends[i])
        return out

    rng = np.random.default_rng(2)
    sizes = rng.integers(120, 2200, n)  # 1-20 offset commits a batch, as bench_offsets writes
    ends = np.cumsum(sizes)
    starts = ends - sizes
    buf = rng.integers(0, 256, int(ends[-1]), dtype=np.uint8)
    print(f"Kafka, {n} spans, {buf.nbytes / 1e6:.0f} MB")
    view = memoryview(buf)
    spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
    cases = (("CRC-32C (magic 2)", K.CRC32C_TABLE, crc32c.crc32c), ("CRC-32 (magic 0/1)", K.CRC32_TABLE, zlib.crc32))
    for name, table, lib in cases:
        crc32_spans(table, buf, starts[:10], ends[:10])
        t_kernel, a = best(lambda t=table: crc32_spans(t, buf, starts, ends), repeat)
        t_lib, b = best(lambda f=lib: np.array([f(view[s:e]) for s, e in spans], np.int64), repeat)
        assert np.array_equal(a, b)
        line(f"{name} of every span", t_kernel, t_lib, f"{lib.__module__}.{lib.__name__} per span")

    # in place: the offsets decoder's framing of bench_offsets' segments, CRCs in the kernel, or
    # framed by headers only and the CRC-32C of each batch from the library
    data = Path(tempfile.gettempdir()) / "kaudit-bench-offsets" / str(records)
    data.mkdir(parents=True, exist_ok=True)
    build(data, records)
    segments = [np.fromfile(f, np.uint8) for f in sorted(data.rglob("*.log"))]

    def kernel_crc():
        return [K.scan_batches(b, True, K.CRC32C_TABLE, K.CRC32_TABLE) for b in segments]

    def library_crc():
        out = []
        for b in segments:
            bt = K.scan_batches(b, False, K.CRC32C_TABLE, K.CRC32_TABLE)
            pos = bt[:, K.B_POS]
            word = b[(pos + 17)[:, None] + np.arange(4)].astype(np.int64)
            stored = (word[:, 0] << 24) | (word[:, 1] << 16) | (word[:, 2] << 8) | word[:, 3]
            v = memoryview(b)
            spans = zip((pos + 21).tolist(), (pos + bt[:, K.B_SIZE]).tolist(), strict=True)
            got = [crc32c.crc32c(v[s:e]) for s, e in spans]
            assert np.array_equal(np.array(got, np.int64), stored)
            out.append(bt)
        return out

    kernel_crc()
    t_kernel, a = best(kernel_crc, repeat)
    t_lib, b = best(library_crc, repeat)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    batches = sum(len(x) for x in a)
    mb = sum(x.nbytes for x in segments) / 1e6
    line(f"framing + CRC-32C of {records} offset commits ({batches} batches, {mb:.0f} MB)", t_kernel, t_lib,
         "header-only framing + crc32c per batch")


def bench_dictionary(n: int, repeat: int) -> None:
    import pyarrow as pa

    from pipelines.kafka import segment

    rng = np.random.default_rng(3)
    names = [f"consumer-group-{i:05d}.service-{i % 37}".encode() for i in range(2_000)]
    lengths = np.array([len(x) for x in names])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    pick = rng.zipf(1.3, n) % len(names)  # a few busy groups, a long tail
    buf = np.frombuffer(b"".join(names), np.uint8)
    pos, length = starts[pick].astype(np.int64), lengths[pick].astype(np.int64)
    length[rng.random(n) < 0.01] = -1  # nulls
    print(f"Kafka string column, {n} spans, {len(names)} distinct")
    segment._dictionary(buf, pos[:10], length[:10])
    t_kernel, a = best(lambda: segment._dictionary(buf, pos, length)[0], repeat)
    t_lib, b = best(lambda: segment._strings(buf, pos, length)[0].dictionary_encode(), repeat)
    assert a.cast(pa.string()).equals(b.cast(pa.string()))
    line("dictionary encoding (dictionary_spans)", t_kernel, t_lib, "gather_strings + pyarrow dictionary_encode")


def bench_start(repeat: int) -> None:
    from pipelines.zookeeper.native import KERNELS

    if KERNELS.aot_module() is None:
        print("process start: no ahead-of-time build installed (make builds it); skipped")
        return
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(prefix="kaudit-bench-numba-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}

        def run(*cmd):
            wh = Path(tmp) / "wh"
            subprocess.run(["rm", "-rf", str(wh)], check=True)
            subprocess.run([*cmd, "--warehouse", str(wh), "--quiet", "extract", "zk-snapshot", str(SNAPSHOT)],
                           check=True, env=env, cwd=REPO)

        python = sys.executable
        t_cold, _ = best(lambda: run(python, "-c", JIT_CLI), 1)
        t_jit, _ = best(lambda: run(python, "-c", JIT_CLI), repeat)
        t_aot, _ = best(lambda: run(python, "-m", "pipelines.cli"), repeat)
    print(f"process start: kaudit extract zk-snapshot {SNAPSHOT.name} ({SNAPSHOT.stat().st_size} bytes)")
    line("ahead of time vs JIT, warm cache", t_aot, t_jit, "JIT")
    line("ahead of time vs JIT, cold cache", t_aot, t_cold, "JIT")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--spans", type=int, default=500_000)
    ap.add_argument("--records", type=int, default=1_000_000, help="offset commits of the in-place CRC figure")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    bench_zookeeper(args.nodes, args.repeat)
    bench_kafka(args.spans, args.records, args.repeat)
    bench_dictionary(args.spans, args.repeat)
    bench_start(args.repeat)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
