"""Shared by the ZooKeeper benchmarks: a data dir written by a real ZooKeeper 3.8 server
(Debian), built once and cached under ``benchmarks/.data/`` (gitignored)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from testkit.zk_server import ZkServer, free_port

HERE = Path(__file__).resolve().parent

DATA = HERE / ".data"
BATCH = 500  # creates per multi request
WINDOW = 32  # multi requests in flight


def server(root: Path, heap: str = "1536m") -> ZkServer:
    os.environ["JVMFLAGS"] = f"-Xmx{heap}"  # zkServer.sh puts JVMFLAGS after the test harness' -Xmx512m
    return ZkServer(root, free_port(), "forceSync=no\n").start(timeout=600)


def build(name: str, nodes: int, fanout: int = 1000) -> Path:
    """``benchmarks/.data/<name>``: a server root whose data dir holds a snapshot of ``nodes``
    znodes (``/bench/g<i>/n<j>``, short values), written by the server itself at restart."""
    from kazoo.client import KazooClient

    root = DATA / name
    if (root / "READY").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    zk_server = server(root)
    t0 = time.monotonic()
    try:
        zk = KazooClient(hosts=zk_server.hosts, timeout=30)
        zk.start(timeout=60)
        zk.create("/bench")
        groups = max(1, (nodes - 2) // (fanout + 1) + 1)
        paths: list[tuple[str, bytes]] = []
        for g in range(groups):
            paths.append((f"/bench/g{g:05d}", b"group"))
            for j in range(fanout):
                paths.append((f"/bench/g{g:05d}/n{j:04d}", f"value-{g}-{j}".encode()))
        paths = paths[: nodes - 1]
        pending = []
        for i in range(0, len(paths), BATCH):
            tx = zk.transaction()
            for p, v in paths[i : i + BATCH]:
                tx.create(p, v)
            pending.append(tx.commit_async())
            if len(pending) >= WINDOW:
                pending.pop(0).get(timeout=600)
            if i % 100_000 == 0:
                print(f"  {i} znodes written ({time.monotonic() - t0:.0f}s)", flush=True)
        for a in pending:
            a.get(timeout=600)
        zk.stop()
        zk.close()
    finally:
        zk_server.stop()
    # restarting makes the server load the logs and write one snapshot holding everything
    zk_server = server(root)
    try:
        zk = KazooClient(hosts=zk_server.hosts, timeout=30)
        zk.start(timeout=600)  # sessions are served once the data is loaded and the snapshot taken
        zk.stop()
        zk.close()
    finally:
        zk_server.stop()
    (root / "READY").write_text(str(nodes))
    print(f"  built {root} in {time.monotonic() - t0:.0f}s", flush=True)
    return root


def newest_snapshot(root: Path) -> Path:
    snaps = sorted((root / "data" / "version-2").glob("snapshot.*"), key=lambda p: int(p.name.split(".")[1], 16))
    return snaps[-1]
