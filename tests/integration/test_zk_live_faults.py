"""The live walk when the server is not there, does not answer, dies mid-walk, or lets the
walker read nothing: a clear one-line error within a bounded time, exit 1, nothing published."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from pipelines.errors import StepError
from pipelines.warehouse.warehouse import Warehouse
from testkit.zk_server import free_port, start_zk

pytestmark = pytest.mark.integration


def _cli(tmp_path, capsys, *args) -> tuple[int, str, float]:
    from pipelines.cli import main

    t0 = time.monotonic()
    with pytest.raises(SystemExit) as done:
        main(["--warehouse", str(tmp_path / "wh"), "--run-id", "r", "--quiet", "extract", "zk", *args])
    return done.value.code, capsys.readouterr().err, time.monotonic() - t0


def test_refused_unanswered_and_unreadable(zk_server, tmp_path, capsys):
    port = free_port()  # nothing listens there: refused at once, not after the timeout
    rc, err, took = _cli(tmp_path, capsys, "--hosts", f"127.0.0.1:{port},127.0.0.1:{free_port()}")
    assert rc == 1 and took < 3 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"127.0.0.1:{port}" in err and "connection refused" in err

    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        rc, err, took = _cli(tmp_path, capsys, "--hosts", f"127.0.0.1:{silent.getsockname()[1]}", "--timeout", "2")
    assert rc == 1 and 2 <= took < 10 and "no session within 2s" in err and len(err.strip().splitlines()) == 1

    from kazoo.client import KazooClient
    from kazoo.security import make_digest_acl

    zk = KazooClient(hosts=zk_server.hosts, auth_data=[("digest", "owner:owner-pw")])
    zk.start()
    try:
        zk.create("/locked/inside", b"x", makepath=True)
        zk.set_acls("/locked", [make_digest_acl("owner", "owner-pw", all=True)])
        rc, err, took = _cli(tmp_path, capsys, "--hosts", zk_server.hosts, "--chroot", "/locked")
        assert rc == 1 and zk_server.hosts in err and "read nothing" in err and "NoAuth" in err, err
        assert len(err.strip().splitlines()) == 1
        assert not Warehouse(tmp_path / "wh").exists("raw/znodes", "r")
    finally:
        zk.delete("/locked", recursive=True)
        zk.stop()
        zk.close()


def test_a_server_killed_mid_walk_ends_it_in_seconds(tmp_path):
    from kazoo.client import KazooClient

    from pipelines.zookeeper import live

    server = start_zk(tmp_path / "zk")
    try:
        zk = KazooClient(hosts=server.hosts)
        zk.start()
        for i in range(300):
            zk.create(f"/n/{i}", b"x", makepath=True)
        zk.stop()
        zk.close()
        client, root = live.connect(server.hosts, None, None, False, None, None, None)
        killer = threading.Timer(0.5, server.stop)
        killer.start()
        t0 = time.monotonic()
        try:
            with pytest.raises(StepError, match="connection refused") as err:
                live.walk(client, root, window=2, on_node=lambda: time.sleep(0.01))
        finally:
            killer.join()
            live._stop(client)
        took = time.monotonic() - t0
        assert took < live.REFUSED_GRACE + 5 and server.hosts in str(err.value)  # not STALL (120 s)
    finally:
        server.stop()
