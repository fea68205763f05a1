"""A real ZooKeeper 3.8 (private server, snapshots every few dozen txns so the offline read
starts from fuzzy snapshots) with a Kafka-shaped tree: ephemerals, deletes, setData, multi,
containers, TTL nodes, sequential nodes, a closed session. The live walk (as a digest user
that may only READ) and the offline read of the data dir give identical rows; also under a
chroot and at an earlier zxid; the snapshot agrees with ZooKeeper's own SnapshotFormatter."""

from __future__ import annotations

import io
import json
import re
import subprocess
from datetime import UTC
from pathlib import Path

import pyarrow as pa
import pytest
from rich.console import Console

from pipelines.context import RunContext
from pipelines.errors import StepError
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_live, extract_snapshot
from pipelines.zookeeper.snapshot import parse
from testkit.zk_requests import CreateContainer, CreateTTL, send
from testkit.zk_server import start_zk

pytestmark = pytest.mark.integration

ADMIN = ("admin", "admin-secret-pw")
READER = ("reader", "reader-secret-pw")
JAVA_CP = ":".join(
    f"/usr/share/java/{j}.jar"
    for j in ("zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop", "snappy-java", "commons-cli", "metrics-core")
)


def _ctx(root: Path, run_id: str) -> tuple[RunContext, io.StringIO]:
    out = io.StringIO()
    return RunContext(Warehouse(root), run_id, console=Console(file=out, width=200)), out


def _acl():
    from kazoo.security import make_digest_acl

    return [make_digest_acl(*ADMIN, all=True), make_digest_acl(*READER, read=True)]


def _build_tree(zk, acl, hosts: str) -> None:
    """Kafka-shaped: brokers, topics + partition states, consumer groups (ids, owners,
    offsets), controller, cluster id, admin deletions, plus the special node types."""
    from kazoo.client import KazooClient

    zk.create("/kafka", b"", acl=acl)
    for b in range(3):
        reg = {"host": f"b{b}", "port": 9092, "version": 4, "endpoints": [f"PLAINTEXT://b{b}:9092"]}
        zk.create(f"/kafka/brokers/ids/{b}", json.dumps(reg).encode(), acl=acl, ephemeral=True, makepath=True)
    for t in range(6):
        parts = {str(p): [p % 3, (p + 1) % 3] for p in range(4)}
        zk.create(f"/kafka/brokers/topics/t{t}", json.dumps({"version": 1, "partitions": parts}).encode(),
                  acl=acl, makepath=True)
        for p in range(4):
            state = {"controller_epoch": 1, "leader": p % 3, "version": 1, "leader_epoch": 0, "isr": [p % 3]}
            zk.create(f"/kafka/brokers/topics/t{t}/partitions/{p}/state", json.dumps(state).encode(),
                      acl=acl, makepath=True)
    zk.create("/kafka/controller", b'{"version":1,"brokerid":0}', acl=acl, ephemeral=True)
    zk.create("/kafka/cluster/id", b'{"version":"1","id":"abcdefghijklmnopqrstuv"}', acl=acl, makepath=True)
    for g in range(4):
        zk.create(f"/kafka/consumers/g{g}/ids/g{g}_host-1-abcd", b'{"version":1,"subscription":{"t0":2}}',
                  acl=acl, ephemeral=True, makepath=True)
        for p in range(4):
            zk.create(f"/kafka/consumers/g{g}/owners/t0/{p}", f"g{g}_host-1-abcd-{p % 2}".encode(),
                      acl=acl, ephemeral=True, makepath=True)
            zk.create(f"/kafka/consumers/g{g}/offsets/t0/{p}", b"0", acl=acl, makepath=True)
            for i in range(1, 4):
                zk.set(f"/kafka/consumers/g{g}/offsets/t0/{p}", str(100 * i).encode())
    # deletes: a topic created then deleted (recursive), pending deletion marker
    zk.create("/kafka/admin/delete_topics/t5", b"", acl=acl, makepath=True)
    zk.delete("/kafka/brokers/topics/t4", recursive=True)
    # multi: one that commits, one that fails (version check) and changes nothing
    tx = zk.transaction()
    tx.create("/kafka/multi-a", b"a", acl=acl)
    tx.set_data("/kafka/cluster/id", b'{"version":"1","id":"ZYXWVUTSRQPONMLKJIHGFE"}')
    tx.delete("/kafka/admin/delete_topics/t5")
    tx.create("/kafka/multi-b", b"b", acl=acl)
    assert all(not isinstance(r, Exception) for r in tx.commit())
    tx = zk.transaction()
    tx.create("/kafka/never", b"x", acl=acl)
    tx.check("/kafka/multi-a", 7)
    assert any(isinstance(r, Exception) for r in tx.commit())
    # containers (one with a child, one never used) and TTL nodes (long TTL: not expired)
    send(zk, CreateContainer("/kafka/locks", b"", acl, 4))
    zk.create("/kafka/locks/lock-", b"me", acl=acl, sequence=True, ephemeral=True)
    send(zk, CreateContainer("/kafka/empty-container", b"", acl, 4))
    send(zk, CreateTTL("/kafka/ttl-node", b"ttl", acl, 5, 3_600_000))
    zk.create("/kafka/seq/item-", b"1", acl=acl, sequence=True, makepath=True)
    zk.create("/kafka/seq/item-", b"2", acl=acl, sequence=True)
    zk.set_acls("/kafka/seq", acl)  # aversion 1
    zk.create("/outside/a", b"not under the chroot", acl=acl, makepath=True)
    zk.create("/empty-data", b"", acl=acl)
    # another session: its ephemerals go when it closes (closeSession)
    other = KazooClient(hosts=hosts, auth_data=[("digest", ":".join(ADMIN))])
    other.start()
    other.create("/kafka/consumers/g0/ids/gone", b"x", acl=acl, ephemeral=True)
    other.create("/kafka/consumers/g9/ids/gone", b"x", acl=acl, ephemeral=True, makepath=True)
    other.stop()
    other.close()
    # many small writes so that several snapshots are taken along the way
    for i in range(120):
        zk.create(f"/kafka/bulk/n{i:03d}", str(i).encode() * (i % 7), acl=acl, makepath=True)
        if i % 3 == 0:
            zk.set(f"/kafka/bulk/n{i:03d}", b"changed")
        if i % 5 == 0:
            zk.delete(f"/kafka/bulk/n{i:03d}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from kazoo.client import KazooClient

    server = start_zk(tmp_path_factory.mktemp("zkpriv"), extra_conf="snapCount=40\n")
    zk = KazooClient(hosts=server.hosts, auth_data=[("digest", ":".join(ADMIN))])
    try:
        zk.start()
        acl = _acl()
        zk.set_acls("/", acl)
        zk.create("/mark", b"", acl=acl)
        _build_tree(zk, acl, server.hosts)
        mid = zk.create("/kafka/mid-mark", b"", acl=acl)
        mid_zxid = zk.exists(mid).czxid
        yield server, zk, acl, mid_zxid
    finally:
        zk.stop()
        zk.close()
        server.stop()


def _rows(ctx: RunContext) -> pa.Table:
    t = read_arrow(ctx.warehouse, "raw/znodes", ctx.run_id)
    return t.drop_columns(["source", "run_id"])


def _assert_same(live: pa.Table, offline: pa.Table) -> None:
    assert live.num_rows == offline.num_rows
    assert live["path"].to_pylist() == offline["path"].to_pylist()
    for a, b in zip(live.to_pylist(), offline.to_pylist(), strict=True):
        assert a == b, (a, b)
    assert live.equals(offline)


def test_live_equals_offline(cluster, tmp_path):
    server, zk, acl, mid_zxid = cluster
    ctx_mid, _ = _ctx(tmp_path / "wh", "mid")
    # the tree as it is now (at mid_zxid), walked live as the READ-only user
    extract_live(ctx_mid, hosts=server.hosts, chroot=None, auth="digest:" + ":".join(READER),
                 tls=False, ca=None, cert=None, key=None)
    at_mid = _rows(ctx_mid)

    # more writes after the mark, then the full comparison
    for i in range(30):
        zk.create(f"/kafka/late/n{i}", b"late", acl=acl, makepath=True)
    zk.delete("/kafka/late/n3")
    zk.set("/kafka/late/n4", b"set late")

    ctx, out = _ctx(tmp_path / "wh", "live")
    meta = extract_live(ctx, hosts=server.hosts, chroot=None, auth="digest:" + ":".join(READER),
                        tls=False, ca=None, cert=None, key=None)
    live = _rows(ctx)
    octx, _ = _ctx(tmp_path / "wh", "offline")
    ometa = extract_snapshot(octx, path=server.data_dir, at_zxid=None)
    offline = _rows(octx)
    _assert_same(live, offline)

    paths = set(live["path"].to_pylist())
    assert "/" in paths and "/kafka/brokers/ids/0" in paths and "/kafka/locks" in paths
    assert "/kafka/brokers/topics/t4" not in paths and "/kafka/never" not in paths
    assert "/kafka/consumers/g0/ids/gone" not in paths and "/kafka/consumers/g9/ids" in paths
    assert not any(p.startswith("/zookeeper") for p in paths)
    by_path = {r["path"]: r for r in live.to_pylist()}
    assert by_path["/kafka/brokers/ids/0"]["ephemeral_owner"] == zk.client_id[0]
    assert by_path["/kafka/locks"]["ephemeral_owner"] == 0 and by_path["/kafka/ttl-node"]["ephemeral_owner"] == 0
    assert by_path["/kafka/seq"]["aversion"] == 1
    assert by_path["/kafka/consumers/g0/offsets/t0/0"]["version"] == 3
    assert by_path["/empty-data"]["data"] == b"" and by_path["/empty-data"]["data_length"] == 0
    assert by_path["/"]["num_children"] == 5  # zookeeper, mark, kafka, outside, empty-data
    assert meta["nodes"] == live.num_rows
    assert meta["zxid_range"]["mzxid_max"] == max(live["mzxid"].to_pylist())
    assert meta["zxid_range"]["pzxid_max"] == max(live["pzxid"].to_pylist())
    # the offline read started from a (fuzzy) snapshot and replayed logs after it
    assert ometa["snapshot"] is not None and ometa["txns_applied"] > 0 and ometa["logs_replayed"]
    assert ometa["txn_digest_mismatches"] == 0 and ometa["txn_digests_checked"] > 0
    assert ometa["digest_verified"] in (True, None)
    # credentials never leave the walker
    assert READER[1] not in out.getvalue()
    for part in (tmp_path / "wh").rglob("*"):
        if part.is_file():
            assert READER[1].encode() not in part.read_bytes()

    # under a chroot: live (hosts/kafka) == offline re-rooted at /kafka
    cctx, _ = _ctx(tmp_path / "wh", "live-chroot")
    extract_live(cctx, hosts=server.hosts, chroot="/kafka", auth="digest:" + ":".join(READER),
                 tls=False, ca=None, cert=None, key=None)
    coctx, _ = _ctx(tmp_path / "wh", "offline-chroot")
    extract_snapshot(coctx, path=server.data_dir / "version-2", at_zxid=None, chroot="/kafka")
    chrooted = _rows(cctx)
    _assert_same(chrooted, _rows(coctx))
    assert chrooted["path"][0].as_py() == "/" and "/brokers/ids/0" in chrooted["path"].to_pylist()

    # an earlier zxid: the offline replay stops there and equals the walk made at that time
    actx, _ = _ctx(tmp_path / "wh", "at-mid")
    ameta = extract_snapshot(actx, path=server.data_dir, at_zxid=mid_zxid)
    assert ameta["zxid"] <= mid_zxid + 2  # the walker's own createSession/closeSession may follow
    _assert_same(at_mid, _rows(actx))


def test_noauth_is_quarantined_and_errors_hide_credentials(cluster, tmp_path):
    server, zk, acl, _ = cluster
    from kazoo.security import make_digest_acl

    zk.create("/secret", b"hidden", acl=[make_digest_acl(*ADMIN, all=True)])
    zk.create("/secret/child", b"hidden", acl=[make_digest_acl(*ADMIN, all=True)])
    try:
        ctx, out = _ctx(tmp_path / "wh", "noauth")
        extract_live(ctx, hosts=server.hosts, chroot=None, auth="digest:" + ":".join(READER),
                     tls=False, ca=None, cert=None, key=None)
        q = read_arrow(ctx.warehouse, "raw/quarantine", "noauth").to_pylist()
        assert [(r["source"], r["location"]) for r in q] == [("zk-live", "/secret")]
        assert "NoAuth" in q[0]["reason"]
        assert "/secret" not in _rows(ctx)["path"].to_pylist()
    finally:
        zk.delete("/secret", recursive=True)
    # nothing listens there: a clear error, no credentials in it, nothing published
    ctx, out = _ctx(tmp_path / "wh", "down")
    with pytest.raises(StepError) as err:
        extract_live(ctx, hosts="127.0.0.1:1", chroot=None, auth="digest:" + ":".join(READER),
                     tls=False, ca=None, cert=None, key=None, connect_timeout=2)
    assert READER[1] not in str(err.value) and "127.0.0.1:1" in str(err.value)
    assert not ctx.warehouse.exists("raw/znodes", "down")


def _formatter(snapshot: Path) -> tuple[int, dict[str, dict]]:
    out = subprocess.run(
        ["java", "-Duser.timezone=UTC", "-cp", JAVA_CP, "org.apache.zookeeper.server.SnapshotFormatter", "-d",
         str(snapshot)], check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    count = int(re.search(r"ZNode Details \(count=(\d+)\)", out).group(1))
    nodes: dict[str, dict] = {}
    for block in out.split("----\n")[1:]:
        lines = block.strip("\n").split("\n")
        if not lines[0].startswith("/"):
            continue
        fields = {k.strip(): v.strip() for k, _, v in (line.partition(" =") for line in lines[1:]) if _}
        nodes[lines[0]] = fields
    return count, nodes


def test_snapshot_agrees_with_snapshotformatter(cluster):
    server, zk, acl, _ = cluster
    snaps = sorted((server.data_dir / "version-2").glob("snapshot.*"), key=lambda p: int(p.name.split(".")[1], 16))
    snap_file = snaps[-1]
    ours = parse(snap_file)
    count, theirs = _formatter(snap_file)
    paths = ours.nodes.paths().to_pylist()
    n = ours.nodes.stats()
    assert len(paths) > 100
    assert count == len(paths) + 1  # its count includes the root's "/" alias
    assert set(theirs) == {p or "/" for p in paths}
    for i, p in enumerate(paths):
        f = theirs[p or "/"]
        ctime = n["ctime"][i]
        expect = {
            "cZxid": f"0x{int(n['czxid'][i]):014x}", "mZxid": f"0x{int(n['mzxid'][i]):014x}",
            "pZxid": f"0x{int(n['pzxid'][i]):014x}", "cversion": str(n["cversion"][i]),
            "dataVersion": str(n["version"][i]), "aclVersion": str(n["aversion"][i]),
            "ephemeralOwner": f"0x{int(n['ephemeral_owner'][i]) & (2**64 - 1):014x}",
            "ctime": pa.scalar(int(ctime), pa.timestamp("ms", tz="UTC")).as_py()
            .astimezone(UTC).strftime("%a %b %d %H:%M:%S UTC %Y"),
        }
        assert {k: f[k] for k in expect} == expect, p


def test_walk_survives_a_server_restart_and_fails_clearly_when_it_cannot(cluster, tmp_path):
    """Reads in flight when the server goes away are retried with backoff; the walk resumes
    and completes. With the server gone for good, the walk fails with a StepError."""
    import threading
    import time

    from pipelines.zookeeper import live

    server, zk, acl, _ = cluster
    client, root = live.connect(server.hosts, None, "digest:" + ":".join(READER), False, None, None, None)
    bounce = threading.Timer(0.3, lambda: (server.stop(), server.start()))
    bounce.start()
    try:
        # a little work per node so that the restart lands in the middle of the walk
        result = live.walk(client, root, window=2, on_node=lambda: time.sleep(0.003))
    finally:
        bounce.join()
    assert result.retries > 0
    octx, _ = _ctx(tmp_path / "wh", "after-restart")
    extract_snapshot(octx, path=server.data_dir, at_zxid=None)
    offline = _rows(octx)
    # persistent subtrees only: if the restart outlasted a session, its ephemerals are gone by now
    def stable(t: pa.Table) -> pa.Table:
        keep = pa.compute.or_(pa.compute.starts_with(t["path"], "/kafka/bulk/"),
                              pa.compute.starts_with(t["path"], "/kafka/brokers/topics/"))
        t = t.filter(keep)
        t = t.take(pa.compute.sort_indices(t, sort_keys=[("path", "ascending")]))
        return t.select(offline.column_names).cast(offline.schema)

    walked = stable(result.rows)
    assert walked.num_rows > 100 and walked.equals(stable(offline))

    killer = threading.Timer(0.3, server.stop)
    killer.start()
    try:
        with pytest.raises(StepError, match="cannot complete"):
            live.walk(client, root, window=2, max_attempts=3, stall_timeout=5,
                      on_node=lambda: time.sleep(0.003))
    finally:
        killer.join()
        live._stop(client)
        server.start()
