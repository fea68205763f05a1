"""Pipelined read-only requests over kazoo's own connection.

kazoo's connection thread sends one request per wake-up (one ``select`` - a fresh epoll set
each time - plus a pipe read per request) and reads one response per wake-up (two ``select`` +
``recv`` per response); every answer then hops through an ``AsyncResult`` (a lock and a
condition) and kazoo's callback thread. That costs ~0.3 ms of CPU per read, whatever the
number of reads in flight, so a "pipelined" walk on kazoo's public async API is barely faster
than one round trip at a time.

This module keeps everything of kazoo's connection - connect, handshake, auth, TLS, pings,
reconnects, session expiry, error mapping (``ConnectionHandler._read_response``) - and
changes only how bytes move:

- :class:`BatchingConnection` (installed on one client by :func:`install`) writes every
  queued read request (``GetData``/``GetChildren``/``GetChildren2``/``Exists``) in one
  ``send``, reads the socket in large chunks and hands every complete reply in the buffer to
  kazoo's own reply handling before going back to ``select``. Other requests (auth, close,
  anything else) go through kazoo's code unchanged, one at a time.
- :class:`Sink` replaces ``AsyncResult``: kazoo's connection thread calls ``set`` /
  ``set_exception`` on a small :class:`Read` object, which appends to a deque the caller
  drains in batches (no callback thread, one wake-up per batch).

Only the requests the caller builds are sent: this module never issues a write.

It overrides private methods of kazoo's ``ConnectionHandler`` and uses the client's private
request queues (``_queue`` of (request, async object), ``_pending`` of (request, async
object, xid)) and ``_xid``: written against kazoo :data:`KAZOO_VERSION`, which
``pyproject.toml`` pins exactly; ``tests/unit/zookeeper/test_kazoo_internals.py`` fails,
naming what moved, when the installed kazoo no longer has them.
"""

from __future__ import annotations

import ssl
import struct
import threading
from collections import deque

from kazoo.exceptions import (
    AuthFailedError,
    ConnectionClosedError,
    ConnectionDropped,
    SessionExpiredError,
)
from kazoo.protocol.connection import CLOSE_RESPONSE, ConnectionHandler
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import Exists, GetChildren, GetChildren2, GetData
from kazoo.protocol.states import KeeperState

KAZOO_VERSION = "2.11.0"
READ_TYPES = frozenset({GetData.type, GetChildren.type, GetChildren2.type, Exists.type})
MAX_BATCH = 4096  # requests per send
CHUNK = 1 << 18  # bytes per recv
FRAME = struct.Struct(">iii")  # length, xid, type: the request header
LENGTH = struct.Struct(">i")


class BatchingConnection(ConnectionHandler):
    """kazoo's ConnectionHandler with batched writes of read requests and buffered reads."""

    _rbuf: bytearray | None = None

    def _connect(self, host, hostip, port):
        self._rbuf = bytearray()  # a new socket: nothing buffered
        return super()._connect(host, hostip, port)

    def _read(self, length, timeout):
        buf = self._rbuf
        if buf is None:
            buf = self._rbuf = bytearray()
        while len(buf) < length:
            with self._socket_error_handling():
                sock = self._socket
                # TLS: the ssl object may hold decrypted bytes the raw socket no longer shows
                ready = hasattr(sock, "pending") and sock.pending() > 0
                if not ready and not self.handler.select([sock], [], [], timeout)[0]:
                    raise self.handler.timeout_exception("socket time-out during read")
                try:
                    chunk = sock.recv(CHUNK)
                except ssl.SSLError as e:
                    if e.errno in (ssl.SSL_ERROR_WANT_READ, ssl.SSL_ERROR_WANT_WRITE):
                        continue
                    raise
            if not chunk:
                raise ConnectionDropped("socket connection broken")
            buf += chunk
        out = bytes(buf[:length])
        del buf[:length]
        return out

    def _reply_buffered(self) -> bool:
        buf = self._rbuf
        if buf is not None and len(buf) >= 4 and len(buf) >= 4 + LENGTH.unpack_from(buf)[0]:
            return True
        sock = self._socket
        return hasattr(sock, "pending") and sock.pending() > 0

    def _read_socket(self, read_timeout):
        # every complete reply already received, not one per select()
        while True:
            response = super()._read_socket(read_timeout)
            if response == CLOSE_RESPONSE or not self._reply_buffered():
                return response

    def _send_request(self, read_timeout, connect_timeout):
        client = self.client
        queue = client._queue
        try:
            head = queue[0][0]
        except IndexError:
            head = None
        if head is None or getattr(head, "type", None) not in READ_TYPES:
            return super()._send_request(read_timeout, connect_timeout)
        # Wake-up bytes first: every request queued before one of them is sent below. (Bytes
        # written later stay for the next select; with an empty queue kazoo just drops one.)
        self._read_sock.recv(CHUNK)
        out = bytearray()
        sent = []
        while queue and len(sent) < MAX_BATCH:
            request, async_object = queue[0]
            if getattr(request, "type", None) not in READ_TYPES:
                break
            self._xid = (self._xid % 2147483647) + 1
            body = request.serialize()
            out += FRAME.pack(len(body) + 8, self._xid, request.type)
            out += body
            queue.popleft()
            sent.append((request, async_object, self._xid))
        # pending first: if the write fails, kazoo fails every pending request (ConnectionLoss)
        client._pending.extend(sent)
        self._write(bytes(out), connect_timeout)
        if queue:  # a request kazoo sends itself, or more than MAX_BATCH: come back for it
            self._write_sock.send(b"\0")


def install(client) -> None:
    """Make ``client`` (a KazooClient, not started yet) use :class:`BatchingConnection`."""
    if type(client._connection) is ConnectionHandler:
        client._connection.__class__ = BatchingConnection


class Read:
    """One read in flight: what the caller needs to handle its answer."""

    __slots__ = ("attempt", "fired", "kind", "path", "sink")

    def __init__(self, kind: str, path: str, attempt: int, sink: Sink):
        self.kind = kind
        self.path = path
        self.attempt = attempt
        self.sink = sink
        self.fired = False

    # the two calls kazoo makes on an async object
    def set(self, value=None) -> None:
        self.sink.put(self, value, None)

    def set_exception(self, exc) -> None:
        self.sink.put(self, None, exc)


class Sink:
    """Answers of :class:`Read` objects, drained in batches by one consumer thread."""

    def __init__(self, client):
        self.client = client
        self.done: deque = deque()
        self.ready = threading.Event()
        prefix = _prefix_root(client.chroot or "", "/")
        self._base = "" if prefix == "/" else prefix
        self._root = prefix

    def put(self, read: Read, value, exc) -> None:
        if read.fired:  # kazoo may fail a request twice while closing
            return
        read.fired = True
        self.done.append((read, value, exc))
        if not self.ready.is_set():
            self.ready.set()

    def request(self, kind: str, path: str, attempt: int = 0):
        """(request, Read) for a ``get`` (GetData) or ``children`` (GetChildren) of a
        client-visible path (relative to the client's chroot)."""
        full = self._root if path == "/" else self._base + path
        req = GetData(full, None) if kind == "get" else GetChildren(full, None)
        return req, Read(kind, path, attempt, self)

    def submit(self, batch: list) -> None:
        """Queue (request, Read) pairs on the client's connection; one wake-up for all."""
        if not batch:
            return
        client = self.client
        state = client._state
        exc = None
        if state == KeeperState.AUTH_FAILED:
            exc = AuthFailedError()
        elif state == KeeperState.CLOSED:
            exc = ConnectionClosedError("Connection has been closed")
        elif state == KeeperState.EXPIRED_SESSION:
            exc = SessionExpiredError()
        write_sock = client._connection._write_sock
        if exc is None and write_sock is None:
            exc = ConnectionClosedError("Connection has been closed")
        if exc is not None:
            for _, read in batch:
                read.set_exception(exc)
            return
        client._queue.extend(batch)
        try:
            write_sock.send(b"\0")
        except Exception:  # noqa: BLE001 - closed under us: kazoo's _call does the same
            for _, read in batch:
                read.set_exception(ConnectionClosedError("Connection has been closed"))

    def take(self, timeout: float) -> list:
        """Every answer so far; waits up to ``timeout`` for the first. [] on timeout."""
        done = self.done
        if not done:
            self.ready.clear()
            if not done and not self.ready.wait(timeout):
                return []
        out = []
        pop = done.popleft
        while done:
            out.append(pop())
        return out
