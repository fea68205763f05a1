"""A scripted consumer-coordination history driven through a real ZooKeeper (issue 21).

:class:`Script` wraps kazoo clients (one per ZooKeeper session: a broker or a consumer) and
records every change it makes, with the zxid and mtime the server returned, and the deletes
ZooKeeper makes for it when a session closes (the ephemerals the script created in it). Tests
compute the expected history from ``Script.changes``, never from kaudit.

:func:`play` runs the history of the issue's test data: consumers joining and leaving, owners
moving in the right order and in a wrong one (a partition left with the wrong owner for a
while, then fixed), offsets written (one going back), a broker removed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kazoo.client import KazooClient


@dataclass
class Change:
    zxid: int
    mtime: int | None  # ms; None for a delete (the server does not return it)
    session: int
    op: str  # 'create' | 'set' | 'delete'
    path: str
    value: bytes | None


@dataclass
class Script:
    hosts: str
    changes: list[Change] = field(default_factory=list)
    clients: dict[str, KazooClient] = field(default_factory=dict)
    ephemerals: dict[str, list[str]] = field(default_factory=dict)
    closed: list[tuple[str, int]] = field(default_factory=list)  # (name, session) closed by the script

    def client(self, name: str) -> KazooClient:
        if name not in self.clients:
            zk = KazooClient(hosts=self.hosts, timeout=10)
            zk.start(timeout=20)
            self.clients[name] = zk
            self.ephemerals[name] = []
        return self.clients[name]

    def session(self, name: str) -> int:
        return self.client(name).client_id[0]

    def create(self, name: str, path: str, value: bytes, ephemeral: bool = False) -> None:
        zk = self.client(name)
        zk.ensure_path(path.rsplit("/", 1)[0])
        _, stat = zk.create(path, value, ephemeral=ephemeral, include_data=True)
        self.changes.append(Change(stat.czxid, stat.mtime, self.session(name), "create", path, value))
        if ephemeral:
            self.ephemerals[name].append(path)

    def set(self, name: str, path: str, value: bytes) -> None:
        stat = self.client(name).set(path, value)
        self.changes.append(Change(stat.mzxid, stat.mtime, self.session(name), "set", path, value))

    def delete(self, name: str, path: str) -> None:
        zk = self.client(name)
        zk.delete(path)
        # the reply header of the delete carries its zxid
        self.changes.append(Change(zk.last_zxid, None, self.session(name), "delete", path, None))
        for eph in self.ephemerals.values():
            if path in eph:
                eph.remove(path)

    def close(self, name: str) -> None:
        """Close a session: ZooKeeper deletes its ephemerals in one closeSession txn, whose zxid
        is then the pzxid of their parent (read by another session)."""
        zk = self.clients.pop(name)
        session = zk.client_id[0]
        zk.stop()
        zk.close()
        self.closed.append((name, session))
        gone = self.ephemerals.pop(name)
        zxid = self.client("admin").exists(gone[0].rsplit("/", 1)[0]).pzxid if gone else -1
        for path in gone:
            self.changes.append(Change(zxid, None, session, "delete", path, None))

    def stop(self) -> None:
        for name in list(self.clients):
            zk = self.clients.pop(name)
            zk.stop()
            zk.close()


def registration(topic: str) -> bytes:
    return json.dumps({"version": 1, "subscription": {topic: 1}, "pattern": "static", "timestamp": "0"}).encode()


def play(s: Script, topic: str = "t", group: str = "g") -> None:
    """The issue's history on ``s`` (see the module docstring)."""
    g = f"/consumers/{group}"
    for b in (0, 1):
        s.create(f"broker{b}", f"/brokers/ids/{b}",
                 json.dumps({"host": f"b{b}", "port": 9092, "version": 4}).encode(), ephemeral=True)
    s.create("admin", f"/brokers/topics/{topic}",
             json.dumps({"version": 1, "partitions": {str(p): [p % 2] for p in range(4)}}).encode())
    # c1 alone: owns 0..3, commits
    s.create("c1", f"{g}/ids/c1", registration(topic), ephemeral=True)
    for p in range(4):
        s.create("c1", f"{g}/owners/{topic}/{p}", b"c1-0", ephemeral=True)
    for p in range(4):
        s.create("c1", f"{g}/offsets/{topic}/{p}", b"10")
    s.set("c1", f"{g}/offsets/{topic}/0", b"20")
    # c2 joins: the right order (c1 releases 2, 3, then c2 claims them)
    s.create("c2", f"{g}/ids/c2", registration(topic), ephemeral=True)
    for p in (2, 3):
        s.delete("c1", f"{g}/owners/{topic}/{p}")
    for p in (2, 3):
        s.create("c2", f"{g}/owners/{topic}/{p}", b"c2-0", ephemeral=True)
    s.set("c1", f"{g}/offsets/{topic}/0", b"30")
    s.set("c2", f"{g}/offsets/{topic}/2", b"25")
    s.set("c1", f"{g}/offsets/{topic}/0", b"28")  # goes back: a regression
    # c2 leaves (its session closes: ZooKeeper deletes its id and owners); c1 takes 2 only:
    # partition 3 stays unowned, then c1 claims it late
    s.close("c2")
    s.create("c1", f"{g}/owners/{topic}/2", b"c1-0", ephemeral=True)
    s.create("c1", f"{g}/owners/{topic}/3", b"c1-0", ephemeral=True)
    # c3 joins, in a wrong order: c3 claims 1 (range gives c1 0,1 and c3 2,3) after c1
    # released it by mistake, and c1 keeps 2 and 3; the next rebalance (broker 1 removed) fixes it
    s.create("c3", f"{g}/ids/c3", registration(topic), ephemeral=True)
    s.delete("c1", f"{g}/owners/{topic}/1")
    s.create("c3", f"{g}/owners/{topic}/1", b"c3-0", ephemeral=True)
    s.set("c3", f"{g}/offsets/{topic}/1", b"12")
    s.close("broker1")
    s.delete("c3", f"{g}/owners/{topic}/1")
    for p in (2, 3):
        s.delete("c1", f"{g}/owners/{topic}/{p}")
    s.create("c1", f"{g}/owners/{topic}/1", b"c1-0", ephemeral=True)
    for p in (2, 3):
        s.create("c3", f"{g}/owners/{topic}/{p}", b"c3-0", ephemeral=True)
    s.set("c3", f"{g}/offsets/{topic}/3", b"40")
