"""ZooKeeper requests kazoo has no call for (containers, TTL nodes): the same wire requests,
opcodes 19 and 21 (``ZooDefs.OpCode.createContainer`` / ``createTTL``), sent on a kazoo client."""

from __future__ import annotations

from collections import namedtuple

from kazoo.protocol.serialization import Create2, long_struct


class CreateContainer(Create2):
    type = 19


class CreateTTL(namedtuple("CreateTTL", "path data acl flags ttl")):
    type = 21

    def serialize(self):
        b = Create2(self.path, self.data, self.acl, self.flags).serialize()
        b.extend(long_struct.pack(self.ttl))
        return b

    deserialize = Create2.deserialize


def send(zk, request):
    """``request`` on the kazoo client ``zk``; its reply (raises what the server answered)."""
    result = zk.handler.async_result()
    zk._call(request, result)
    return result.get(timeout=10)
