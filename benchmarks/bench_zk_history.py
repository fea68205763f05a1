"""Benchmark: the whole retained past of a ZooKeeper data dir (``raw/znode_changes``).

A real ZooKeeper 3.8 writes ``--txns`` offset commits (``setData`` of
``/consumers/g<i>/offsets/t/<p>``) in ``--snapshots`` equal parts, restarted after each part
(a server takes a snapshot when it starts, so the data dir holds exactly ``--snapshots``
snapshots, one at zxid 0 and one after each part but the last; ``snapCount`` is set out of
reach). Cached under ``benchmarks/.data/``. ``extract zk-snapshot`` reads the tree from the
newest snapshot and the history from the oldest, so every txn is replayed into the history.

Measured in one run, the extract in a child process (wall time, its peak RSS) and, in this
process, the I/O floor: reading the same log files (and the snapshots the history passes),
page cache warm as for the extract. Prints the medians of ``--repeat`` runs and their ratio.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_zk_history.py --txns 1000000 --snapshots 10 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipelines.zookeeper import datadir

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GROUPS, PARTITIONS = 100, 10
WINDOW = 2000  # requests in flight

EXTRACT = """
import io, json, resource, sys, time
from pathlib import Path
from rich.console import Console
from pipelines.context import RunContext
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_snapshot
t, cpu = time.perf_counter(), time.process_time()
meta = extract_snapshot(RunContext(Warehouse(Path(sys.argv[2])), "bench", console=Console(file=io.StringIO())),
                        path=Path(sys.argv[1]))
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
print(json.dumps({"wall": wall, "cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "history": meta["history"], "rows": meta["znode_changes"], "nodes": meta["nodes"]}))
"""


def data_dir(txns: int, snapshots: int) -> Path:
    from kazoo.client import KazooClient
    from zk_data import DATA

    from testkit.zk_server import ZkServer, free_port

    root = DATA / f"history-{txns}-s{snapshots}"
    if (root / "done").exists():
        return root / "data"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    zk = ZkServer(root, free_port(), f"forceSync=no\nsnapCount={txns * 10}\n")
    paths = [f"/consumers/g{g}/offsets/t/{p}" for g in range(GROUPS) for p in range(PARTITIONS)]
    written, part = 0, -(-txns // snapshots)
    for k in range(snapshots):
        zk.start(timeout=600)  # loads the data dir, then writes a snapshot of it
        try:
            client = KazooClient(hosts=zk.hosts, timeout=30)
            client.start(timeout=600)
            if k == 0:
                for path in paths:
                    client.create(path, b"0", makepath=True)
            pending = []
            for i in range(written, min(txns, written + part)):
                pending.append(client.set_async(paths[i % len(paths)], str(i).encode()))
                if len(pending) >= WINDOW:
                    for r in pending:
                        r.get(timeout=60)
                    pending.clear()
            for r in pending:
                r.get(timeout=60)
            written = min(txns, written + part)
            client.stop()
            client.close()
        finally:
            zk.stop()
        print(f"  part {k + 1}/{snapshots}: {written:,} txns written", flush=True)
    (root / "done").touch()
    return root / "data"


def extract(data: Path, wh: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", EXTRACT, str(data), str(wh)], check=True, capture_output=True,
                         text=True, cwd=REPO)
    return json.loads(out.stdout.strip().splitlines()[-1])


def io_floor(data: Path) -> float:
    """Seconds to read every log file and snapshot file of the data dir once."""
    d = data / "version-2"
    files = [p for _, p in datadir.list_files(d, "log")] + [p for _, p in datadir.list_files(d, "snapshot")]
    t = time.perf_counter()
    for p in files:
        p.read_bytes()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=200_000)
    ap.add_argument("--snapshots", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = data_dir(args.txns, args.snapshots)
    d = data / "version-2"
    snaps, logs = datadir.list_files(d, "snapshot"), datadir.list_files(d, "log")
    size = sum(p.stat().st_size for _, p in logs)
    tmp = Path(tempfile.mkdtemp(prefix="bench-zk-history-"))
    try:
        runs: dict[str, list[float]] = {"extract": [], "cpu": [], "rss_mb": [], "I/O floor": []}
        for k in range(args.repeat):
            r = extract(data, tmp / f"wh{k}")
            runs["extract"].append(r["wall"])
            runs["cpu"].append(r["cpu"])
            runs["rss_mb"].append(r["rss_mb"])
            runs["I/O floor"].append(io_floor(data))
        med = {name: statistics.median(v) for name, v in runs.items()}
        h = r["history"]
        print(f"{len(snaps)} snapshots, {len(logs)} logs ({size / 1e6:,.0f} MB), history from "
              f"{Path(h['snapshot']).name}: {h['txns']:,} txns, {h['snapshots']} snapshots passed "
              f"({h['snapshots_checked']} checked by digest), {r['rows']:,} raw/znode_changes rows, "
              f"{r['nodes']:,} znodes; median of {args.repeat}:")
        print(f"  extract zk-snapshot       {med['extract']:8.2f} s   CPU {med['cpu']:.2f} s   "
              f"peak RSS {med['rss_mb']:,.0f} MB   (load {os.getloadavg()[0]:.1f})")
        print(f"  I/O floor (read the files){med['I/O floor']:8.2f} s")
        print(f"  extract / I/O floor       {med['extract'] / med['I/O floor']:8.1f}x   "
              f"(CPU / I/O floor {med['cpu'] / med['I/O floor']:.1f}x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
