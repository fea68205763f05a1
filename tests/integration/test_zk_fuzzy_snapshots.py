"""Every snapshot of a busy real ZooKeeper 3.8 read as the newest one.

ZooKeeper names a snapshot by the last zxid applied when it starts writing and writes the tree
digest of the zxid it has reached when it ends; txns applied meanwhile are in some nodes and
not in others (a fuzzy snapshot), or in all of them (its digest then matches). Here a server
that snapshots every few txns takes a mixed workload sent without waiting for each reply
(creates, ephemerals, sequentials, multis that commit and that fail, containers, TTL nodes,
setData, setACL, recursive deletes, sessions whose close deletes their ephemerals), so many
txns land while snapshots are written. Then, for every snapshot, the data dir with the newer
snapshots removed is read offline: the tree must equal the live walk made at the end, every
column, with the digest verified and nothing quarantined - whatever the snapshot's fuzz."""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import OPEN_ACL_UNSAFE
from rich.console import Console

from pipelines.context import RunContext
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_live, extract_snapshot
from testkit.zk_requests import CreateContainer, CreateTTL, send
from testkit.zk_server import start_zk

pytestmark = pytest.mark.integration

ROUNDS, OPS = 12, 30  # sessions, and requests each sends before waiting for the replies


def _ctx(warehouse: Path, run_id: str) -> RunContext:
    return RunContext(Warehouse(warehouse), run_id, quiet=True, console=Console(file=io.StringIO()))


def _workload(hosts: str, rnd: random.Random) -> None:
    main = KazooClient(hosts=hosts)
    main.start()
    main.create("/c", b"")
    persistent = ["/c"]
    for r in range(ROUNDS):
        other = KazooClient(hosts=hosts)
        other.start()
        replies, settled = [], list(persistent)  # main may only write nodes it knows exist
        for i in range(OPS):
            x, parent = rnd.random(), rnd.choice(persistent)
            if x < 0.3:
                persistent.append(f"{parent}/n{r}-{i}")
                replies.append(other.create_async(persistent[-1], rnd.randbytes(rnd.randrange(50))))
            elif x < 0.4:
                replies.append(other.create_async(f"{parent}/e{r}-{i}", b"eph", ephemeral=True))
            elif x < 0.45:
                replies.append(other.create_async(f"{parent}/s-", b"seq", sequence=True))
            elif x < 0.65:
                replies.append(main.set_async(rnd.choice(settled), rnd.randbytes(rnd.randrange(50))))
            elif x < 0.7:
                replies.append(main.set_acls_async(rnd.choice(settled), OPEN_ACL_UNSAFE))
            elif x < 0.8:
                tx = other.transaction()
                tx.create(f"{parent}/m{r}-{i}", b"m")
                tx.set_data(f"{parent}/m{r}-{i}", b"mm")
                if rnd.random() < 0.3:
                    tx.check(f"{parent}/m{r}-{i}", 7)  # fails: the multi changes nothing
                replies.append(tx.commit_async())
            elif x < 0.85:
                send(other, CreateContainer(f"{parent}/k{r}-{i}", b"", OPEN_ACL_UNSAFE, 4))
            elif x < 0.9:
                send(other, CreateTTL(f"{parent}/t{r}-{i}", b"ttl", OPEN_ACL_UNSAFE, 5, 3_600_000))
        for reply in replies:
            reply.get(timeout=30)  # a multi that fails answers with its results, no error
        for _ in range(2):
            if len(persistent) > 1:
                gone = rnd.choice(persistent[1:])
                main.delete(gone, recursive=True)
                persistent = [p for p in persistent if p != gone and not p.startswith(gone + "/")]
        other.stop()
        other.close()  # closeSession: its ephemerals go
    main.stop()
    main.close()


def test_every_snapshot_read_as_the_newest_equals_the_live_tree(tmp_path):
    server = start_zk(tmp_path / "zk", extra_conf="snapCount=6\n")
    try:
        _workload(server.hosts, random.Random(7))
        live = _ctx(tmp_path / "wh", "live")
        extract_live(live, hosts=server.hosts, chroot=None, auth=None, tls=False, ca=None, cert=None, key=None)
    finally:
        server.stop()
    want = read_arrow(live.warehouse, "raw/znodes", "live").drop_columns(["source", "run_id"])
    snapshots = sorted(server.data_dir.glob("version-2/snapshot.*"), key=lambda p: int(p.suffix[1:], 16))
    assert len(snapshots) > 20
    wrong = []
    for k, snapshot in enumerate(snapshots):
        data = tmp_path / "copy" / "data"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(server.data_dir, data)
        for newer in data.glob("version-2/snapshot.*"):
            if int(newer.suffix[1:], 16) > int(snapshot.suffix[1:], 16):
                newer.unlink()
        ctx = _ctx(tmp_path / "wh", f"s{k}")
        meta = extract_snapshot(ctx, path=data, at_zxid=None)
        got = read_arrow(ctx.warehouse, "raw/znodes", ctx.run_id).drop_columns(["source", "run_id"])
        quarantined = [q["reason"] for q in read_arrow(ctx.warehouse, "raw/quarantine", ctx.run_id).to_pylist()]
        if not (got.equals(want) and meta["digest_verified"] is True and not quarantined):
            wrong.append((snapshot.name, meta["digest_verified"], got.num_rows, want.num_rows, quarantined[:2]))
    assert not wrong, wrong
