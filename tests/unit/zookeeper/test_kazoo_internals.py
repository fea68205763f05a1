"""The kazoo internals ``pipelines/zookeeper/pipelined.py`` relies on, as the installed kazoo has
them: a kazoo upgrade that moves any of them fails here, naming it, instead of in a live walk."""

from __future__ import annotations

import inspect
import re
import tomllib
from collections import deque
from importlib.metadata import version
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.protocol import connection, paths, serialization
from kazoo.protocol.states import KeeperState

from pipelines.zookeeper import pipelined

ROOT = Path(__file__).resolve().parents[3]
WRITTEN_AGAINST = f"pipelines/zookeeper/pipelined.py was written against kazoo {pipelined.KAZOO_VERSION}"

# ConnectionHandler methods pipelined.BatchingConnection overrides or calls, with their parameters
HANDLER_METHODS = {
    "_connect": ["self", "host", "hostip", "port"],
    "_read": ["self", "length", "timeout"],
    "_read_socket": ["self", "read_timeout"],
    "_send_request": ["self", "read_timeout", "connect_timeout"],
    "_write": ["self", "msg", "timeout"],
    "_socket_error_handling": ["self"],
    "_read_response": ["self", "header", "buffer", "offset"],
}
# kazoo's own lines whose behaviour BatchingConnection._send_request reproduces for a batch
SOURCE_LINES = {
    "_send_request": ["request, async_object = client._queue[0]", "self._xid = (self._xid % 2147483647) + 1",
                      "client._queue.popleft()", "client._pending.append((request, async_object, xid))"],
    "_read_response": ["request, async_object, xid = client._pending.popleft()", "async_object.set(",
                       "async_object.set_exception("],
}


def test_pinned_version_is_installed():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.match(r"kazoo\b", d)]
    assert pins == [f"kazoo=={pipelined.KAZOO_VERSION}"], f"pyproject.toml must pin kazoo exactly: {WRITTEN_AGAINST}"
    assert version("kazoo") == pipelined.KAZOO_VERSION, f"kazoo {version('kazoo')} is installed; {WRITTEN_AGAINST}"


@pytest.mark.parametrize("name", sorted(HANDLER_METHODS))
def test_connection_handler_methods(name):
    method = getattr(connection.ConnectionHandler, name, None)
    assert callable(method), f"kazoo's ConnectionHandler.{name} is gone; {WRITTEN_AGAINST}"
    params = list(inspect.signature(method).parameters)
    assert params == HANDLER_METHODS[name], (
        f"kazoo's ConnectionHandler.{name}{tuple(params)} changed from {tuple(HANDLER_METHODS[name])}; "
        f"{WRITTEN_AGAINST}")


@pytest.mark.parametrize("name", sorted(SOURCE_LINES))
def test_request_queue_protocol(name):
    source = inspect.getsource(getattr(connection.ConnectionHandler, name))
    for line in SOURCE_LINES[name]:
        assert line in source, f"kazoo's ConnectionHandler.{name} no longer does `{line}`; {WRITTEN_AGAINST}"


def test_client_and_connection_state():
    client = KazooClient(hosts="127.0.0.1:1/chroot")  # never started: no connection is made
    for name in ("_queue", "_pending"):
        assert isinstance(getattr(client, name, None), deque), f"KazooClient.{name} is not a deque; {WRITTEN_AGAINST}"
    assert type(client._connection) is connection.ConnectionHandler, (
        f"KazooClient._connection changed; {WRITTEN_AGAINST}")
    for name in ("_socket", "_read_sock", "_write_sock", "_xid", "handler", "client"):
        assert hasattr(client._connection, name), f"kazoo's ConnectionHandler has no {name}; {WRITTEN_AGAINST}"
    assert client._state == KeeperState.CLOSED and client.chroot == "/chroot", (
        f"KazooClient state changed; {WRITTEN_AGAINST}")
    pipelined.install(client)
    assert type(client._connection) is pipelined.BatchingConnection, (
        f"cannot swap the connection's class; {WRITTEN_AGAINST}")
    sink = pipelined.Sink(client)
    request, read = sink.request("get", "/a")
    assert request.path == "/chroot/a" and request.type == serialization.GetData.type


def test_protocol_names():
    assert connection.CLOSE_RESPONSE == serialization.Close.type, f"kazoo's CLOSE_RESPONSE changed; {WRITTEN_AGAINST}"
    assert list(inspect.signature(paths._prefix_root).parameters) == ["root", "path", "trailing"], (
        f"kazoo's paths._prefix_root changed; {WRITTEN_AGAINST}")
    for cls in (serialization.GetData, serialization.GetChildren):
        assert cls._fields == ("path", "watcher") and hasattr(cls, "serialize"), (
            f"kazoo's {cls.__name__} changed; {WRITTEN_AGAINST}")
    for state in ("AUTH_FAILED", "CLOSED", "EXPIRED_SESSION"):
        assert hasattr(KeeperState, state), f"kazoo's KeeperState.{state} is gone; {WRITTEN_AGAINST}"
