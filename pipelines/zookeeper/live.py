"""The read-only live walker: a walk of a ZooKeeper tree with kazoo, keeping a bounded window
of reads in flight (no round trip per node). The reads go over kazoo's connection (connect,
auth, TLS, reconnects are kazoo's) but are written and answered in batches, see
:mod:`pipelines.zookeeper.pipelined`.

Per node one ``get`` (data + stat); ``get_children`` only for nodes whose stat says they have
children. Only these two read calls are ever made (plus the session's own connect/auth).

- a node deleted mid-walk (NoNode) is skipped;
- TLS (``--tls``): the servers' certificates are verified against ``--ca`` (default: the
  system's trust store), names included, and ``--cert``/``--key`` are the client's for mutual
  TLS; a handshake every server fails ends the connect at once, naming why;
- a node the walker may not read (NoAuth) becomes a quarantine row (source ``zk-live``,
  location = the path); its subtree cannot be listed;
- a lost connection / expired session fails the reads in flight: they are re-issued with
  exponential backoff and the walk goes on; after too many failed attempts of one read, or
  authentication failure, the walk fails with :class:`pipelines.errors.StepError`.
- servers that refuse connections (nothing listens: a server down) end the connect or the
  walk within seconds (:func:`refused` probes them while kazoo retries); only servers that
  accept but do not answer cost the whole timeout (``--timeout``).
- a walk that reads no znode at all (no read permission on the root) fails: nothing to publish.

Paths are those the client sees: under a chroot (``--chroot /kafka`` or ``hosts/kafka``),
the chroot node is ``/``. Without a chroot, ``/zookeeper`` is not walked (see
:mod:`pipelines.zookeeper.rows`). Credentials are passed to kazoo only; they never appear
in messages.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines.errors import InputError, StepError, UsageError
from pipelines.warehouse import quarantine
from pipelines.zookeeper.rows import SYSTEM_ROOT, normalize_chroot

QUARANTINE_SOURCE = "zk-live"
WINDOW = 256
# Reads failed by a lost connection are re-queued here, not retried by kazoo's ``KazooRetry``:
# that retries one blocking call, i.e. one round trip per node (``bench_zk_live.py``: several
# times slower than this walk), while the walk keeps WINDOW reads in flight and a lost
# connection fails them together (one pause for the batch). The connection itself is retried
# by kazoo (``connection_retry=KazooRetry(...)`` in :func:`connect`).
MAX_ATTEMPTS = 8
STALL = 120.0  # seconds without any answer before the walk gives up
CONNECT = 15.0
PROBE = 1.0  # seconds between probes of refusing servers
REFUSED_GRACE = 10.0  # seconds a walk waits for servers that refuse connections (a restart)


@dataclass
class LiveWalk:
    rows: pa.Table
    quarantine: list[dict] = field(default_factory=list)
    skipped_deleted: int = 0
    retries: int = 0
    reads: int = 0


def parse_auth(auth: str | None) -> list[tuple[str, str]]:
    if not auth:
        return []
    scheme, sep, cred = auth.partition(":")
    if not sep or not scheme or not cred:
        raise UsageError("--auth: expected SCHEME:CREDENTIAL, e.g. digest:user:password")
    return [(scheme, cred)]


def _hosts_with_chroot(hosts: str, chroot: str | None) -> tuple[str, str]:
    """kazoo hosts string and the effective chroot ('' for none)."""
    base, slash, in_hosts = hosts.partition("/")
    root = normalize_chroot(chroot if chroot else (slash + in_hosts if slash else ""))
    return base + root, root


def host_ports(hosts: str) -> list[tuple[str, int]]:
    """(host, port) of each server of a kazoo hosts string (chroot ignored; default port 2181)."""
    out = []
    for part in hosts.partition("/")[0].split(","):
        part = part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not port.isdigit() or host.endswith(":"):  # no port (or a bare IPv6 address)
            host, port = part, "2181"
        out.append((host.strip("[]"), int(port)))
    return out


def refused(hosts: str, timeout: float = 1.0) -> bool:
    """True when every server actively refuses a TCP connection (nothing listens there). A
    server that does not answer in ``timeout`` or accepts is not refusing."""
    for host, port in host_ports(hosts):
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return False
        except ConnectionRefusedError:
            continue
        except OSError:  # unreachable, timed out, unknown name: not known to be down
            return False
    return True


TLS_HINTS = {  # OpenSSL's reasons for a failed handshake -> what the user can do about it
    "bad certificate": "the server refused the client certificate: --cert/--key",
    "certificate required": "the server wants a client certificate: --cert/--key",
    "unexpected eof": "the server closed the connection: is this its secureClientPort?",
    "wrong version number": "not TLS: is this the server's secureClientPort?",
}


def tls_context(ca, cert, key) -> ssl.SSLContext:
    """The client side of a TLS connection as kazoo makes it (chain verified against ``ca``, or
    the system's trust store without one), and the server's name checked against its
    certificate as ZooKeeper's own client does. Files that cannot be loaded are an error."""
    for option, path in (("--ca", ca), ("--cert", cert), ("--key", key)):
        if path is not None and not Path(path).is_file():
            raise InputError(f"{option} {path}: no such file (expected a PEM file)")
    ctx = ssl.create_default_context()
    try:
        if ca is not None:
            ctx.load_verify_locations(str(ca))
    except (ssl.SSLError, ValueError) as err:
        raise InputError(f"--ca {ca}: not a usable PEM CA bundle ({getattr(err, 'reason', None) or err})") from None
    try:
        if cert is not None:
            ctx.load_cert_chain(str(cert), str(key))
    except (ssl.SSLError, ValueError) as err:
        raise InputError(f"--cert {cert} --key {key}: not a usable PEM certificate and key "
                         f"({getattr(err, 'reason', None) or err})") from None
    return ctx


def tls_refused(hosts: str, ctx: ssl.SSLContext, timeout: float = 5.0) -> str | None:
    """Why every server fails the TLS handshake (certificate not trusted, not TLS, ...), or None
    when one completes it or cannot be reached (kazoo's retries then decide)."""
    reasons = []
    for host, port in host_ports(hosts):
        try:
            with socket.create_connection((host, port), timeout=timeout) as raw, \
                    ctx.wrap_socket(raw, server_hostname=host):
                return None
        except ssl.SSLError as err:
            if isinstance(err, ssl.SSLCertVerificationError):
                reasons.append(f"certificate verify failed: {err.verify_message}")
            else:
                reason = (err.reason or str(err)).lower().replace("_", " ")
                hint = next((h for k, h in TLS_HINTS.items() if k in reason), None)
                reasons.append(f"{reason} ({hint})" if hint else reason)
        except OSError:
            return None
    return "; ".join(dict.fromkeys(reasons)) or None


def connect(hosts: str, chroot: str | None, auth: str | None, tls: bool, ca, cert, key, timeout: float = CONNECT):
    from kazoo.client import KazooClient
    from kazoo.retry import KazooRetry

    from pipelines.zookeeper import pipelined

    conn_hosts, root = _hosts_with_chroot(hosts, chroot)
    kwargs = {}
    ctx = None
    if tls:
        if (cert is None) != (key is None):
            raise UsageError("--cert and --key go together")
        ctx = tls_context(ca, cert, key)
        kwargs.update(use_ssl=True, verify_certs=True, check_hostname=True, ca=str(ca) if ca else None,
                      certfile=str(cert) if cert else None, keyfile=str(key) if key else None)
    elif ca or cert or key:
        raise UsageError("--ca/--cert/--key need --tls")
    # kazoo's own connection chatter would interleave with ours; failures are reported by the walk
    logging.getLogger("kazoo.client").setLevel(logging.ERROR)
    client = KazooClient(
        hosts=conn_hosts, auth_data=parse_auth(auth) or None, read_only=True, timeout=min(10.0, timeout),
        connection_retry=KazooRetry(max_tries=-1, delay=0.2, max_delay=5), **kwargs,
    )
    pipelined.install(client)  # kazoo's connection, with batched reads on the wire
    shown = hosts.partition("/")[0]
    if refused(shown):
        raise StepError(f"ZooKeeper {shown}: connection refused (no server listening)")
    if ctx is not None and (why := tls_refused(shown, ctx, min(5.0, timeout))):
        raise StepError(f"ZooKeeper {shown}: TLS handshake failed: {why}")
    started = client.start_async()
    deadline = time.monotonic() + timeout
    while not started.wait(min(PROBE, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline or refused(shown):
            why = "connection refused (no server listening)" if time.monotonic() < deadline else \
                f"no session within {timeout:g}s"
            _stop(client)
            raise StepError(f"ZooKeeper {shown}: cannot connect: {why}")
    if not client.connected:
        _stop(client)
        raise StepError(f"ZooKeeper {shown}: cannot connect")
    return client, root


def _stop(client) -> None:
    try:
        client.stop()
        client.close()
    except Exception:  # noqa: BLE001
        pass


def walk(client, root: str, *, window: int = WINDOW, max_attempts: int = MAX_ATTEMPTS, stall_timeout: float = STALL,
         refused_grace: float = REFUSED_GRACE, on_node=None, progress=None) -> LiveWalk:
    """Walk the tree the connected ``client`` sees from ``/``. ``stall_timeout``: how long
    to wait for any answer (kazoo queues reads while it reconnects) before giving up;
    ``refused_grace``: how long every server may refuse connections (a restart) before.
    ``on_node()`` is called per node read, ``progress(n)`` per batch of answers (n nodes)."""
    from kazoo.exceptions import (
        AuthFailedError,
        ConnectionClosedError,
        ConnectionLoss,
        NoAuthError,
        NoNodeError,
        OperationTimeoutError,
        SessionExpiredError,
    )

    from pipelines.zookeeper.pipelined import Sink

    retryable = (ConnectionLoss, SessionExpiredError, OperationTimeoutError, ConnectionClosedError)
    sink = Sink(client)
    todo: list[tuple[str, str, int]] = [("get", "/", 0)]
    inflight = 0
    paths: list[str] = []
    datas: list[bytes | None] = []
    stats: list = []
    out = LiveWalk(rows=None)  # type: ignore[arg-type]
    skip_system = root == ""

    while todo or inflight:
        if todo and inflight < window:
            batch = []
            while todo and inflight < window:
                batch.append(sink.request(*todo.pop()))
                inflight += 1
            out.reads += len(batch)
            sink.submit(batch)
        answers = _answers(sink, client, stall_timeout, refused_grace)
        backoff = 0.0
        before = len(paths)
        for read, value, err in answers:
            inflight -= 1
            path = read.path
            if err is None:
                if read.kind == "get":
                    data, st = value
                    paths.append(path)
                    datas.append(data)
                    stats.append(st)
                    if on_node is not None:
                        on_node()
                    if st.numChildren > 0:
                        todo.append(("children", path, 0))
                else:
                    prefix = "/" if path == "/" else path + "/"
                    for child in value:
                        child_path = prefix + child
                        if skip_system and child_path == SYSTEM_ROOT:
                            continue
                        todo.append(("get", child_path, 0))
            elif isinstance(err, NoNodeError):
                if path == "/":
                    raise StepError(f"chroot {root} does not exist") if root else StepError("the root znode is missing")
                out.skipped_deleted += 1
            elif isinstance(err, NoAuthError):
                what = "read" if read.kind == "get" else "list the children of"
                why = f"NoAuth: the walker may not {what} this znode"
                out.quarantine.append(quarantine.row(QUARANTINE_SOURCE, path, why))
            elif isinstance(err, AuthFailedError):
                raise StepError("ZooKeeper rejected the credentials (authentication failed)")
            elif isinstance(err, retryable):
                if read.attempt + 1 >= max_attempts:
                    raise StepError(f"the walk cannot complete: {type(err).__name__} reading {path} "
                                    f"after {max_attempts} attempts")
                out.retries += 1
                backoff = max(backoff, min(0.1 * 2**read.attempt, 5.0))
                todo.append((read.kind, path, read.attempt + 1))
            else:
                raise StepError(f"the walk cannot complete: {type(err).__name__} reading {path}")
        if progress is not None and len(paths) > before:
            progress(len(paths) - before)
        if backoff:  # one pause per batch of failed reads (they failed together: a lost connection)
            time.sleep(backoff)
    if not paths:
        why = "; ".join(q["reason"] for q in out.quarantine[:1]) or "no znode could be read"
        shown = ",".join(f"{h}:{p}" for h, p in client.hosts)
        raise StepError(f"ZooKeeper {shown}: the walk read nothing below {root or '/'}: {why}")
    out.rows = _table(paths, datas, stats)
    return out


def _answers(sink, client, stall_timeout: float, refused_grace: float) -> list:
    """The next answers; fails when none came for ``stall_timeout`` s, or sooner when every
    server refused connections for ``refused_grace`` s."""
    start = time.monotonic()
    refusing_since = None
    while True:
        waited = time.monotonic() - start
        answers = sink.take(min(PROBE, max(0.0, stall_timeout - waited)))
        if answers:
            return answers
        now = time.monotonic()
        shown = ",".join(f"{h}:{p}" for h, p in client.hosts)
        if now - start >= stall_timeout:
            raise StepError(f"ZooKeeper {shown}: the walk cannot complete: no answer for {stall_timeout:g}s")
        if client.connected or not refused(shown):
            refusing_since = None
            continue
        refusing_since = refusing_since or now
        if now - refusing_since >= refused_grace:
            raise StepError(f"ZooKeeper {shown}: the walk cannot complete: connection refused "
                            f"(no server listening for {now - start:.0f}s)")


def _table(paths: list, datas: list, stats: list) -> pa.Table:
    ts = pa.timestamp("ms", tz="UTC")
    # ZnodeStat fields: czxid mzxid ctime mtime version cversion aversion ephemeralOwner
    # dataLength numChildren pzxid
    st = np.array(stats, np.int64).reshape(len(stats), 11)
    col = {name: st[:, i] for i, name in enumerate(
        ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeral_owner",
         "data_length", "num_children", "pzxid"))}
    i32 = ("version", "cversion", "aversion", "data_length", "num_children")
    return pa.table({
        "source": pa.array(["live"] * len(paths), pa.string()),
        "path": pa.array(paths, pa.large_string()),
        "data": pa.array(datas, pa.large_binary()),
        "czxid": col["czxid"],
        "mzxid": col["mzxid"],
        "pzxid": col["pzxid"],
        "ctime": pa.array(col["ctime"], pa.int64()).cast(ts),
        "mtime": pa.array(col["mtime"], pa.int64()).cast(ts),
        **{name: pa.array(col[name].astype(np.int32), pa.int32()) for name in i32[:3]},
        "ephemeral_owner": col["ephemeral_owner"],
        **{name: pa.array(col[name].astype(np.int32), pa.int32()) for name in i32[3:]},
    })
