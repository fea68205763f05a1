"""A scripted consumer-coordination history driven through a real ZooKeeper.

:class:`Script` wraps kazoo clients (one per ZooKeeper session: a broker or a consumer) and
records every change it makes, with the zxid and mtime the server returned, and the deletes
ZooKeeper makes for it when a session closes (the ephemerals the script created in it). Tests
compute the expected history from ``Script.changes``, never from kaudit.

:func:`play` runs a short history: consumers joining and leaving, owners moving in the right
order and in a wrong one (a partition left with the wrong owner for a while, then fixed),
offsets written (one going back), a broker removed. :func:`play_past` runs a longer one meant
to lie in the logs before a server's newest snapshot (see its docstring).
"""

from __future__ import annotations

import json
import time
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
    """The short history on ``s`` (see the module docstring)."""
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


@dataclass
class Planted:
    """What :func:`play_past` did, as the zxids the server returned (the test's oracle)."""

    joins: list[int] = field(default_factory=list)  # zxids of consumer id creates
    leaves: list[int] = field(default_factory=list)  # of consumer id deletes (closed sessions)
    wrong_state: int = 0  # the zxid of the join that began the state left with wrong owners
    wrong_owners: dict[int, str] = field(default_factory=dict)  # partition -> the owner written wrongly
    wrong_until: int = 0  # the zxid of the trigger that ended it
    storm: list[int] = field(default_factory=list)  # zxids of the storm's membership changes
    rounds: list[dict[int, int]] = field(default_factory=list)  # per round: partition -> offset written
    regression: tuple[int, int, int] = (0, 0, 0)  # (partition, from, to)
    reset: tuple[int, int, int] = (0, 0, 0)  # (partition, from, to): back to the log start
    stuck: tuple[int, int] = (0, 0)  # (partition, offset) written again and again
    last_fact: int = 0  # the zxid of the last planted fact
    filler: int = 0  # txns written after it (outside /consumers and /brokers)


def play_past(s: Script, topic: str = "t", group: str = "g", partitions: int = 4, hold: float = 9.0,
              filler: int = 60) -> Planted:
    """A history whose facts a test finds again from the data dir (every zxid in the returned
    :class:`Planted` and in ``s.changes``):

    - brokers 0, 1 and topic ``topic``; c1 joins and owns every partition; c2 joins and the
      owners move in the right order (c1 releases, c2 claims); c2 leaves (its session closes);
    - c3 joins and the owners are written in a wrong order: c1 releases partition 1 by mistake,
      c3 claims it and c1 keeps 2 and 3 (range gives c1 0, 1 and c3 2, 3). Nothing else
      changes in the group for ``hold`` seconds (longer than the 0.8 consumer's settle window,
      2 s x 4 retries), then broker 1 leaves and the rebalance it starts writes the right
      owners;
    - a storm: c4 joins and leaves 4 times (8 membership changes, seconds apart at most);
    - 14 rounds of offset commits of every partition, 5 of them during the hold: partition 0
      goes back once (a regression), partition 1 is reset to 0 (the log start) once,
      partition 2 commits one offset from round 4 on (stuck);
    - then ``filler`` writes outside /consumers and /brokers, so that ZooKeeper rolls at least
      one more snapshot after the last fact (it rolls one every snapCount/2 to snapCount txns).
    """
    g = f"/consumers/{group}"
    out = Planted()
    owner = dict.fromkeys(range(partitions), "c1-0")
    offsets = dict.fromkeys(range(partitions), 0)

    def commit_round() -> None:
        k = len(out.rounds) + 1
        written = {}
        for p in range(partitions):
            if p == 2 and k >= 4:
                value = out.stuck[1] if out.stuck[1] else offsets[p] + 40
                out.stuck = (2, value)
            elif p == 0 and k == 7:
                value = offsets[p] - 25
                out.regression = (0, offsets[p], value)
            elif p == 1 and k == 10:
                value = 0
                out.reset = (1, offsets[p], 0)
            else:
                value = offsets[p] + 40
            path = f"{g}/offsets/{topic}/{p}"
            if k == 1:
                s.create(owner[p].split("-")[0], path, str(value).encode())
            else:
                s.set(owner[p].split("-")[0], path, str(value).encode())
            offsets[p] = value
            written[p] = value
        out.rounds.append(written)

    def join(name: str) -> int:
        s.create(name, f"{g}/ids/{name}", registration(topic), ephemeral=True)
        out.joins.append(s.changes[-1].zxid)
        return s.changes[-1].zxid

    def leave(name: str) -> int:
        s.close(name)
        out.leaves.append(s.changes[-1].zxid)
        return s.changes[-1].zxid

    def claim(name: str, p: int) -> None:
        s.create(name, f"{g}/owners/{topic}/{p}", f"{name}-0".encode(), ephemeral=True)
        owner[p] = f"{name}-0"

    def release(name: str, p: int) -> None:
        s.delete(name, f"{g}/owners/{topic}/{p}")

    for b in (0, 1):
        s.create(f"broker{b}", f"/brokers/ids/{b}",
                 json.dumps({"host": f"b{b}", "port": 9092, "version": 4}).encode(), ephemeral=True)
    s.create("admin", f"/brokers/topics/{topic}",
             json.dumps({"version": 1, "partitions": {str(p): [p % 2] for p in range(partitions)}}).encode())
    join("c1")
    for p in range(partitions):
        claim("c1", p)
    commit_round()
    join("c2")
    for p in (2, 3):
        release("c1", p)
    for p in (2, 3):
        claim("c2", p)
    commit_round()
    leave("c2")
    for p in (2, 3):
        claim("c1", p)
    commit_round()
    # the wrong order, held
    out.wrong_state = join("c3")
    release("c1", 1)
    claim("c3", 1)
    out.wrong_owners = {1: "c3-0", 2: "c1-0", 3: "c1-0"}
    for _ in range(5):
        time.sleep(hold / 5)
        commit_round()
    s.close("broker1")
    out.wrong_until = s.changes[-1].zxid
    release("c3", 1)
    for p in (2, 3):
        release("c1", p)
    claim("c1", 1)
    for p in (2, 3):
        claim("c3", p)
    commit_round()
    # the storm
    for _ in range(4):
        out.storm.append(join("c4"))
        out.storm.append(leave("c4"))
    while len(out.rounds) < 14:
        commit_round()
    out.last_fact = max(c.zxid for c in s.changes)
    admin = s.client("admin")
    admin.ensure_path("/filler")
    for i in range(filler):
        admin.set("/filler", str(i).encode())
    out.filler = filler
    return out
