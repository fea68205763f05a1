"""``kaudit extract zk --tls``: a real ZooKeeper 3.8 serving its secureClientPort (Netty, mutual
TLS) with a throwaway CA, server and client certificates made here with the openssl CLI. The
walk over TLS reads what the test wrote; a CA that did not sign the server's certificate, a
missing client certificate, a plain port, a missing CA file and one that is not PEM each end in
one line, exit 1, at once."""

from __future__ import annotations

import subprocess
import time

import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.zk_server import free_port, start_zk

pytestmark = pytest.mark.integration

# Debian's zkServer.sh leaves netty-codec (which the Netty connection factory needs) off its
# classpath; zkServer.sh puts SERVER_JVMFLAGS after its own -cp, and java takes the last one.
CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/netty-codec.jar"
TREE = {"/kafka": b"", "/kafka/brokers": b"", "/kafka/brokers/ids": b"", "/kafka/brokers/ids/1": b'{"port":9093}',
        "/kafka/consumers": None, "/kafka/consumers/g1": b"tls-group"}


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-days", "1", "-subj", f"/CN={name}", cwd=d)


def _signed(d, name, ca, san=None):
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", cwd=d)
    ext = d / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "1", "-extfile", ext.name, cwd=d)


@pytest.fixture(scope="module")
def tls_zk(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    _ca(d, "ca")
    _ca(d, "other-ca")
    _signed(d, "server", "ca", san="IP:127.0.0.1")
    _signed(d, "client", "ca")
    (d / "not-a-ca.pem").write_bytes(b"\x30\x82 not a certificate")
    (d / "server-keystore.pem").write_bytes((d / "server.key").read_bytes() + (d / "server.pem").read_bytes())
    secure = free_port()
    conf = (f"secureClientPort={secure}\nsecureClientPortAddress=127.0.0.1\n"
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            f"ssl.keyStore.location={d / 'server-keystore.pem'}\nssl.keyStore.type=PEM\n"
            f"ssl.trustStore.location={d / 'ca.pem'}\nssl.trustStore.type=PEM\nssl.clientAuth=need\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SERVER_JVMFLAGS", f"-cp {CLASSPATH}")
        server = start_zk(d / "zk", conf)
    try:
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=f"127.0.0.1:{secure}", use_ssl=True, verify_certs=True, ca=str(d / "ca.pem"),
                         certfile=str(d / "client.pem"), keyfile=str(d / "client.key"))
        zk.start(timeout=20)
        try:
            for path, data in TREE.items():
                zk.create(path, data)
        finally:
            zk.stop()
            zk.close()
        yield d, server, f"127.0.0.1:{secure}"
    finally:
        server.stop()


def _cli(tmp_path, capsys, *args):
    from pipelines.cli import main

    t0 = time.monotonic()
    with pytest.raises(SystemExit) as done:
        main(["--warehouse", str(tmp_path / "wh"), "--run-id", "r", "--quiet", "extract", "zk", *args])
    return done.value.code, capsys.readouterr().err, time.monotonic() - t0


def test_walk_over_mutual_tls(tls_zk, tmp_path, capsys):
    d, _, hosts = tls_zk
    rc, err, _ = _cli(tmp_path, capsys, "--hosts", hosts, "--chroot", "/kafka", "--tls", "--ca", str(d / "ca.pem"),
                      "--cert", str(d / "client.pem"), "--key", str(d / "client.key"))
    assert rc == 0, err
    rows = read_arrow(Warehouse(tmp_path / "wh"), "raw/znodes", "r").to_pylist()
    expected = {("/" + p.removeprefix("/kafka").lstrip("/")): data for p, data in TREE.items()}
    assert {r["path"]: r["data"] for r in rows} == expected


@pytest.mark.parametrize("case", ["untrusted server", "no client certificate", "plain port", "missing CA file",
                                  "CA file not PEM"])
def test_tls_failures_are_one_line(tls_zk, tmp_path, capsys, case):
    d, server, hosts = tls_zk
    client = ["--cert", str(d / "client.pem"), "--key", str(d / "client.key")]
    args, expected = {
        "untrusted server": (["--hosts", hosts, "--ca", str(d / "other-ca.pem"), *client],
                             f"ZooKeeper {hosts}: TLS handshake failed: certificate verify failed"),
        "no client certificate": (["--hosts", hosts, "--ca", str(d / "ca.pem")],
                                  f"ZooKeeper {hosts}: TLS handshake failed: sslv3 alert bad certificate (the server "
                                  "refused the client certificate: --cert/--key)"),
        "plain port": (["--hosts", server.hosts, "--ca", str(d / "ca.pem"), *client],
                       f"ZooKeeper {server.hosts}: TLS handshake failed: unexpected eof while reading (the server "
                       "closed the connection: is this its secureClientPort?)"),
        "missing CA file": (["--hosts", hosts, "--ca", str(d / "nope.pem")], f"--ca {d / 'nope.pem'}: no such file"),
        "CA file not PEM": (["--hosts", hosts, "--ca", str(d / "not-a-ca.pem")],
                            f"--ca {d / 'not-a-ca.pem'}: not a usable PEM CA bundle"),
    }[case]
    rc, err, took = _cli(tmp_path, capsys, *args, "--tls", "--timeout", "10")
    assert rc == 1 and expected in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert took < 8, f"{case}: {took:.1f}s, not at once"
    assert not Warehouse(tmp_path / "wh").exists("raw/znodes", "r")
