"""Benchmark: ``raw/znode_changes`` (issue 21) - a data dir whose txn logs hold ``--txns`` offset
commits (``setData`` of ``/consumers/g<i>/offsets/t/<p>``, written by a real ZooKeeper 3.8,
cached under ``benchmarks/.data/``) read by ``extract zk-snapshot``, in one run against:

- the I/O floor of the same rows: reading the log files' bytes and writing the rows the
  extract wrote (``raw/znode_changes``, read back from its Parquet into memory first) with the
  extract's writer;
- the same extract without the history (the replay alone, as before issue 21).

Prints each median of ``--repeat`` runs and the ratios.

    .venv/bin/python benchmarks/bench_zk_history.py --txns 1000000
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import tempfile
from pathlib import Path

import pyarrow.dataset as ds
from clocks import timed
from rich.console import Console

from pipelines.context import RunContext
from pipelines.warehouse import Warehouse
from pipelines.zookeeper import datadir
from pipelines.zookeeper.extract import extract_snapshot

HERE = Path(__file__).resolve().parent
GROUPS, PARTITIONS = 100, 10
WINDOW = 2000  # requests in flight


def data_dir(txns: int) -> Path:
    from kazoo.client import KazooClient
    from zk_data import DATA, server

    root = DATA / f"history-{txns}"
    done = root / "done"
    if done.exists():
        return root / "data"
    shutil.rmtree(root, ignore_errors=True)
    zk = server(root)
    try:
        client = KazooClient(hosts=zk.hosts, timeout=30)
        client.start(timeout=60)
        paths = [f"/consumers/g{g}/offsets/t/{p}" for g in range(GROUPS) for p in range(PARTITIONS)]
        for path in paths:
            client.create(path, b"0", makepath=True)
        pending = []
        for i in range(txns):
            pending.append(client.set_async(paths[i % len(paths)], str(i).encode()))
            if len(pending) >= WINDOW:
                for r in pending:
                    r.get(timeout=60)
                pending.clear()
        for r in pending:
            r.get(timeout=60)
        client.stop()
    finally:
        zk.stop()
    done.touch()
    return root / "data"


def _without_history(data: Path) -> None:
    """The replay as before issue 21: no change is recorded."""
    from pipelines.zookeeper.replay import Tree

    keep = Tree.keep_history
    Tree.keep_history = lambda self, zxid: None
    try:
        datadir.read_dir(data / "version-2")
    finally:
        Tree.keep_history = keep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--txns", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    server_dir = data_dir(args.txns)
    tmp = Path(tempfile.mkdtemp(prefix="bench-zk-history-"))
    # the logs alone (ZooKeeper snapshotted every 100k txns): the replay starts from the empty
    # tree and every txn is history
    data = tmp / "logs"
    (data / "version-2").mkdir(parents=True)
    for _, p in datadir.list_files(server_dir / "version-2", "log"):
        (data / "version-2" / p.name).hardlink_to(p)
    try:
        runs = {"extract with history": [], "I/O floor": [], "replay without history": []}
        for k in range(args.repeat):
            wh = Warehouse(tmp / f"wh{k}")
            ctx = RunContext(wh, "bench", console=Console(file=io.StringIO()))
            runs["extract with history"].append(timed(lambda ctx=ctx: extract_snapshot(ctx, path=data))[0])
            rows = ds.dataset(wh.partition_dir("raw/znode_changes", "bench"), format="parquet").to_table()
            logs = [p for _, p in datadir.list_files(data / "version-2", "log")]

            def floor(rows=rows, logs=logs, k=k):
                for p in logs:
                    p.read_bytes()
                with Warehouse(tmp / f"floor{k}").transaction("bench", step="floor") as tx:
                    tx.writer("raw/znode_changes", dictionary=["op", "kind"]).write(rows)

            runs["I/O floor"].append(timed(floor)[0])
            runs["replay without history"].append(timed(lambda: _without_history(data))[0])
        med = {name: statistics.median(v) for name, v in runs.items()}
        print(f"{args.txns:,} txns, {rows.num_rows:,} raw/znode_changes rows, median of {args.repeat}:")
        for name, v in med.items():
            print(f"  {name:24s} {v:8.2f} s")
        print(f"  extract / I/O floor      {med['extract with history'] / med['I/O floor']:8.2f}x")
        print(f"  extract / replay alone   {med['extract with history'] / med['replay without history']:8.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
