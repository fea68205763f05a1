"""Compressed snapshots written by the real server (``zookeeper.snapshot.compression.method``):
a ``.gz`` one (the initial snapshot) and a ``.snappy`` one (written at restart), read directly
and through the data dir, where both routes must give the same rows."""

from __future__ import annotations

import shutil

import pytest

from pipelines.zookeeper.extract import read_offline
from pipelines.zookeeper.snapshot import parse
from testkit.zk_server import start_zk

pytestmark = pytest.mark.integration


def test_gz_and_snappy_snapshots_from_the_server(tmp_path, monkeypatch):
    from kazoo.client import KazooClient

    monkeypatch.setenv("SERVER_JVMFLAGS", "-Dzookeeper.snapshot.compression.method=gz")
    server = start_zk(tmp_path / "zk")
    try:
        zk = KazooClient(hosts=server.hosts)
        zk.start()
        for i in range(40):
            zk.create(f"/c/n{i:02d}", f"v{i}".encode() * 50, makepath=True)
        zk.set("/c/n01", b"changed")
        zk.delete("/c/n02")
        zk.stop()
        zk.close()
        server.stop()
        monkeypatch.setenv("SERVER_JVMFLAGS", "-Dzookeeper.snapshot.compression.method=snappy")
        server.start()
        zk = KazooClient(hosts=server.hosts)
        zk.start()  # served once the data is loaded and the restart snapshot written
        zk.stop()
        zk.close()
    finally:
        server.stop()
    d = server.data_dir / "version-2"
    gz = sorted(d.glob("snapshot.*.gz"))
    sn = sorted(d.glob("snapshot.*.snappy"))
    assert gz and sn
    assert parse(gz[0]).compression == "gzip"
    snap = parse(sn[-1])
    assert snap.compression == "snappy" and snap.digest_verified is True
    direct, _ = read_offline(sn[-1])
    assert "/c/n39" in direct["path"].to_pylist() and "/c/n02" not in direct["path"].to_pylist()
    # from the .gz snapshot + the log, up to the zxid of the .snappy one: the same rows
    other = tmp_path / "without-snappy"
    other.mkdir()
    for f in d.iterdir():
        if not f.name.endswith(".snappy"):
            shutil.copy(f, other)
    replayed, res = read_offline(other, at_zxid=snap.zxid)
    assert res.snapshot == str(other / gz[0].name) and res.txns_applied > 40
    assert replayed.equals(direct)
