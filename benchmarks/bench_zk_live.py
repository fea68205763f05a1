"""Live walk: kaudit's bounded-window async walker vs a naive recursive kazoo walk
(``get`` + ``get_children`` per node, one round trip at a time) on a real ZooKeeper 3.8
holding >= 100k znodes (data dir built once, cached under benchmarks/.data/).

    .venv/bin/python benchmarks/bench_zk_live.py [--nodes N]
"""

from __future__ import annotations

import argparse
import sys
import time

from zk_data import build, server


def naive_walk(zk, path: str = "/") -> int:
    """The obvious recursive walk: one synchronous get and get_children per node."""
    if path == "/zookeeper":
        return 0
    zk.get(path)
    count = 1
    for child in zk.get_children(path):
        count += naive_walk(zk, ("/" if path == "/" else path + "/") + child)
    return count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=100_000)
    args = ap.parse_args()
    root = build(f"zk-live-{args.nodes}", args.nodes)
    from kazoo.client import KazooClient

    from pipelines.zookeeper import live

    zk_server = server(root)
    try:
        client, chroot = live.connect(zk_server.hosts, None, None, False, None, None, None, timeout=600)
        live.walk(client, chroot, window=64)  # warm the server's caches and the JIT
        t0 = time.perf_counter()
        result = live.walk(client, chroot)
        t_kaudit = time.perf_counter() - t0
        live._stop(client)
        n = result.rows.num_rows
        print(f"kaudit walk (window {live.WINDOW}): {n} znodes in {t_kaudit:.2f}s ({n / t_kaudit:,.0f}/s)")

        sys.setrecursionlimit(10_000)
        zk = KazooClient(hosts=zk_server.hosts, timeout=30)
        zk.start(timeout=60)
        t0 = time.perf_counter()
        m = naive_walk(zk)
        t_naive = time.perf_counter() - t0
        zk.stop()
        zk.close()
        print(f"naive recursive kazoo walk: {m} znodes in {t_naive:.2f}s ({m / t_naive:,.0f}/s)")
        assert m == n, (m, n)
        print(f"ratio naive / kaudit: {t_naive / t_kaudit:.1f}x (target >= 5x)")
    finally:
        zk_server.stop()


if __name__ == "__main__":
    main()
