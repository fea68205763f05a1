"""The demo's ZooKeeper side: drives the real Debian ZooKeeper 3.8 server
(:mod:`testkit.zk_server`) with kazoo, one session per broker / consumer, into a Kafka-shaped
tree (0.8+ layout of FORMATS.md sec. 4 plus one 0.7-layout topic and group; every consumer
registration, owner and offset write is recorded with the zxid and mtime the server returned:
the whole retained history, from ``snapshot.0`` (the empty tree the server starts with) through
the unbroken chain of txn logs; some groups only after the newest snapshot, one with owners
written in a wrong order and fixed at the next rebalance), then kills the server with SIGKILL
while the sessions are open (a crash: the EPHEMERAL owners stay in the files) and keeps the
small ``version-2/`` files (``preAllocSize=16`` KB, small ``snapCount``: snapshots AND logs
after; no purge, so every snapshot and log from the first one stays)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import time
from pathlib import Path

from testkit.demo.spec import (
    AFTER_SNAPSHOT,
    BROKERS,
    CLUSTER_ID,
    CONTROLLER,
    LEGACY_BROKERS,
    LEGACY_TOPICS,
    PENDING_DELETION,
    TOPICS,
    WRONG_OWNER_GROUP,
    WRONG_OWNER_S,
    ZK_GROUPS,
    ZkConsumer,
    ZkGroup,
    ms,
    zk_offsets,
    zk_owners,
)
from testkit.oracle import range_assign
from testkit.zk_history import Change
from testkit.zk_server import start_zk

ZK_CONF = "preAllocSize=16\nsnapCount=300\nmaxSessionTimeout=180000\n"
SESSION_TIMEOUT_S = 120.0  # long enough for a test to restore the dir and read the ephemerals


def broker_json(bid: int, host: str) -> bytes:
    return json.dumps(
        {
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": [f"PLAINTEXT://{host}:9092"],
            "jmx_port": 9999,
            "features": {},
            "host": host,
            "timestamp": str(ms("2026-11-19T22:00:00") + bid * 1000),
            "port": 9092,
            "version": 5,
        },
        separators=(",", ":"),
    ).encode()


def replicas(topic: str, p: int) -> list[int]:
    ids = sorted(BROKERS)
    rf = 3 if topic == "__consumer_offsets" else 2
    return [ids[(p + i) % len(ids)] for i in range(rf)]


def server_zxid(port: int) -> int:
    """The server's last zxid (four-letter word ``srvr``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"srvr")
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    line = next(line for line in reply.decode().splitlines() if line.startswith("Zxid:"))
    return int(line.split()[1], 16)


def roll_snapshot(admin, commit, version2: Path) -> None:
    """Commit offsets of the inactive group (``commit(path, value)``: a recorded write) until the
    server writes a new snapshot, so that what follows (sessions, ephemerals, updates) lives only
    in the transaction log after it."""
    before = set(version2.glob("snapshot.*"))
    path = "/consumers/archiver/offsets/orders/0"
    for _ in range(4 * int(ZK_CONF.split("snapCount=")[1].split()[0])):
        commit(path, str(int(admin.get(path)[0]) + 1).encode())
        if set(version2.glob("snapshot.*")) - before:
            time.sleep(1.0)  # let the snapshot thread finish writing
            return
    raise RuntimeError("the server wrote no snapshot")


def wrong_order(group: ZkGroup, register, sessions: dict, create, delete, admin) -> None:
    """WRONG_OWNER_GROUP's history: its consumers join one by one; at each join every consumer
    releases the owners it holds and claims its range share, except at the second join, when
    each claims the other's share (the owners are wrong until the third join)."""
    (topic,) = {t for c in group.consumers for t in c.subscription}
    owners = f"/consumers/{group.name}/owners/{topic}"
    admin.ensure_path(owners)
    names = [str(p) for p in range(TOPICS[topic])]
    held: dict[str, str] = {}  # partition -> the consumer holding it
    for k, c in enumerate(group.consumers):
        register(c)
        threads = sorted(f"{x.consumer_id}-0" for x in group.consumers[: k + 1])
        share = range_assign(names, threads)
        if k == 1:
            swapped = dict(zip(threads, reversed(threads), strict=True))
            share = {name: swapped[t] for name, t in share.items()}
        for name, consumer in sorted(held.items()):
            delete(sessions[consumer], f"{owners}/{name}")
        held = {name: t.rsplit("-", 1)[0] for name, t in share.items()}
        for name, thread in share.items():
            create(sessions[held[name]], f"{owners}/{name}", thread.encode())
        if k == 1:
            time.sleep(WRONG_OWNER_S)


def build_zookeeper(work: Path, root: Path) -> tuple[dict, dict, list[Change]]:
    """Drive a real server (in ``work``) into a Kafka-shaped tree and keep its files in
    ``root/zookeeper/version-2``; returns ({path: data}, zk facts, every registration, owner and
    offset change under ``/consumers`` since the server started, in zxid order)."""
    from kazoo.client import KazooClient

    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    server = start_zk(work, extra_conf=ZK_CONF)
    clients: list[KazooClient] = []

    def session() -> KazooClient:
        c = KazooClient(hosts=server.hosts, timeout=SESSION_TIMEOUT_S)
        c.start(timeout=90)
        clients.append(c)
        return c

    def compact(obj) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    try:
        admin = session()
        for path in (
            "/consumers",
            "/admin/delete_topics",
            "/brokers/seqid",
            "/isr_change_notification",
            "/config/changes",
            "/config/clients",
            "/log_dir_event_notification",
            "/latest_producer_id_block",
        ):
            admin.ensure_path(path)
        admin.create("/cluster/id", compact({"version": "1", "id": CLUSTER_ID}), makepath=True)
        admin.create("/controller_epoch", b"3")
        admin.create("/feature", compact({"features": {}, "version": 2, "status": 1}))
        # brokers: ephemeral registrations from each broker's own session
        for bid, host in BROKERS.items():
            session().create(f"/brokers/ids/{bid}", broker_json(bid, host), ephemeral=True, makepath=True)
        for bid, host in LEGACY_BROKERS.items():
            session().create(f"/brokers/ids/{bid}", f"{host}:9092".encode(), ephemeral=True, makepath=True)
        clients[1 + list(BROKERS).index(CONTROLLER)].create(
            "/controller",
            compact(
                {
                    "version": 2,
                    "brokerid": CONTROLLER,
                    "timestamp": str(ms("2026-11-19T22:00:05")),
                    "kraftControllerEpoch": -1,
                }
            ),
            ephemeral=True,
        )
        # 0.8+ topics: assignment JSON, per-partition state, topic config
        for i, (topic, n) in enumerate(TOPICS.items()):
            value = {"version": 1, "partitions": {str(p): replicas(topic, p) for p in range(n)}}
            if i % 2:  # newer brokers write version 2/3 with more fields; both must be read
                value = {
                    "version": 2,
                    "partitions": value["partitions"],
                    "adding_replicas": {},
                    "removing_replicas": {},
                }
            admin.create(f"/brokers/topics/{topic}", compact(value), makepath=True)
            admin.create(f"/brokers/topics/{topic}/partitions")
            for p in range(n):
                reps = replicas(topic, p)
                admin.create(f"/brokers/topics/{topic}/partitions/{p}")
                admin.create(
                    f"/brokers/topics/{topic}/partitions/{p}/state",
                    compact(
                        {"controller_epoch": 3, "leader": reps[0], "version": 1, "leader_epoch": 2 + p % 3, "isr": reps}
                    ),
                )
            cfg = {"cleanup.policy": "compact"} if topic == "__consumer_offsets" else {}
            admin.create(f"/config/topics/{topic}", compact({"version": 1, "config": cfg}), makepath=True)
        for topic in PENDING_DELETION:
            admin.create(f"/admin/delete_topics/{topic}")
        # 0.7 topic: /brokers/topics/<t>/<broker_id> -> nPartitions, ephemeral of the broker
        for topic, per_broker in LEGACY_TOPICS.items():
            admin.ensure_path(f"/brokers/topics/{topic}")
            for bid, n in per_broker.items():
                legacy_session = clients[1 + len(BROKERS) + list(LEGACY_BROKERS).index(bid)]
                legacy_session.create(f"/brokers/topics/{topic}/{bid}", str(n).encode(), ephemeral=True)

        # consumer groups: each consumer registers and claims its partitions from its own session;
        # every registration, owner and offset change is recorded (the history); AFTER_SNAPSHOT
        # and the groups after it only in the txn log after the newest snapshot
        version2 = server.data_dir / "version-2"
        history: list[Change] = []

        def create(s, path: str, value: bytes, ephemeral: bool = True) -> None:
            _, stat = s.create(path, value, ephemeral=ephemeral, include_data=True, makepath=not ephemeral)
            history.append(Change(stat.czxid, stat.ctime, s.client_id[0], "create", path, value))

        def set_offset(s, path: str, value: bytes) -> None:
            stat = s.set(path, value)
            history.append(Change(stat.mzxid, stat.mtime, s.client_id[0], "set", path, value))

        def delete(s, path: str) -> None:
            s.delete(path)
            # the reply header of the delete carries its zxid
            history.append(Change(s.last_zxid, None, s.client_id[0], "delete", path, None))

        def commit(path: str, value: bytes) -> None:
            if admin.exists(path):
                set_offset(admin, path, value)
            else:
                create(admin, path, value, ephemeral=False)

        for group in ZK_GROUPS:
            if group.name == AFTER_SNAPSHOT:
                roll_snapshot(admin, commit, version2)
            base = f"/consumers/{group.name}"
            for sub in ("ids", "owners", "offsets"):
                admin.ensure_path(f"{base}/{sub}")
            sessions = {}

            def register(c: ZkConsumer, base=base, sessions=sessions) -> None:
                s = sessions[c.consumer_id] = session()
                if c.legacy:
                    reg = compact(c.subscription)
                else:
                    reg = compact(
                        {
                            "version": 1,
                            "subscription": c.subscription,
                            "pattern": "static",
                            "timestamp": str(c.timestamp),
                        }
                    )
                create(s, f"{base}/ids/{c.consumer_id}", reg)

            if group.name == WRONG_OWNER_GROUP:
                wrong_order(group, register, sessions, create, delete, admin)
            else:
                for c in group.consumers:
                    register(c)
                ghost = session() if group.ghost_owners else None
                for topic, parts in zk_owners(group).items():
                    admin.ensure_path(f"{base}/owners/{topic}")
                    for name, thread in parts.items():
                        if thread is None:
                            continue
                        create(sessions[thread.rsplit("-", 1)[0]], f"{base}/owners/{topic}/{name}", thread.encode())
                for topic, parts in group.ghost_owners.items():
                    for name, thread in parts.items():
                        create(ghost, f"{base}/owners/{topic}/{name}", thread.encode())
            # offsets: committed in three rounds (create, then two updates)
            final = zk_offsets(group)
            for k, frac in enumerate((0.5, 0.8, 1.0)):
                for topic, parts in final.items():
                    for name, off in parts.items():
                        path = f"{base}/offsets/{topic}/{name}"
                        value = str(int(off * frac) if frac < 1 else off).encode()
                        if k == 0:
                            create(admin, path, value, ephemeral=False)
                        else:
                            set_offset(admin, path, value)

        # make sure the newest snapshot is followed by logged transactions
        for _ in range(20):
            time.sleep(1.0)  # let a snapshot in flight finish
            last_zxid = server_zxid(server.port)
            snaps = sorted(int(f.name.split(".")[1], 16) for f in version2.glob("snapshot.*"))
            if snaps and last_zxid - snaps[-1] >= 25:
                break
            for p in range(6):  # more offset commits of the inactive group
                path = f"/consumers/archiver/offsets/orders/{p}"
                commit(path, str(int(admin.get(path)[0]) + 1).encode())
        else:
            raise RuntimeError("no transaction log after the newest snapshot")

        tree, stats = {}, {}

        def walk(path: str) -> None:
            data, stat = admin.get(path)
            tree[path] = data or b""
            stats[path] = stat
            for child in admin.get_children(path):
                walk(("" if path == "/" else path) + "/" + child)

        walk("/")
        last_zxid = server_zxid(server.port)
        time.sleep(1.0)
        # crash: SIGKILL, sessions still open (ephemerals stay in snapshot/log)
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        server.proc = None
    finally:
        for c in clients:
            try:
                c.stop()
                c.close()
            except Exception:
                pass
        server.stop()

    ephemeral = sorted(p for p, s in stats.items() if s.ephemeralOwner)
    facts = {
        "data_dir": "zookeeper",
        "last_zxid": last_zxid,
        "znodes": len(tree),  # every node of the final tree, "/" and /zookeeper/* included
        # what a reader keeps when it leaves out ZooKeeper's own /zookeeper subtree ("/" included)
        "znodes_outside_zookeeper_subtree": sum(
            1 for p in tree if not (p == "/zookeeper" or p.startswith("/zookeeper/"))
        ),
        "ephemeral_znodes": len(ephemeral),
        "ephemeral_owner_sessions": len({stats[p].ephemeralOwner for p in ephemeral}),
        # the time of the history's last txn (the last ones are offset writes: a node's mtime)
        "history_end_ms": max(s.mtime for s in stats.values()),
        "paths": {
            p: {"data": tree[p].decode(), "ephemeral": bool(stats[p].ephemeralOwner), "version": stats[p].version}
            for p in sorted(tree)
            if p.startswith("/consumers/") or p.startswith("/brokers/ids/")
        },
    }
    target = root / "zookeeper" / "version-2"
    target.mkdir(parents=True)
    for f in sorted((server.data_dir / "version-2").iterdir()):
        shutil.copy2(f, target / f.name)
    facts["files"] = {f.name: f.stat().st_size for f in sorted(target.iterdir())}
    snaps = sorted((f for f in target.glob("snapshot.*")), key=lambda f: int(f.name.split(".")[1], 16))
    logs = sorted((f for f in target.glob("log.*")), key=lambda f: int(f.name.split(".")[1], 16))
    facts["latest_snapshot"] = snaps[-1].name
    facts["latest_snapshot_zxid"] = int(snaps[-1].name.split(".")[1], 16)
    facts["znodes_created_after_latest_snapshot"] = sum(
        1 for s in stats.values() if s.czxid > facts["latest_snapshot_zxid"]
    )
    facts["ephemeral_znodes_created_after_latest_snapshot"] = sum(
        1 for s in stats.values() if s.czxid > facts["latest_snapshot_zxid"] and s.ephemeralOwner
    )
    assert logs and int(logs[-1].name.split(".")[1], 16) <= last_zxid
    first_snapshot = int(snaps[0].name.split(".")[1], 16)
    assert first_snapshot == 0, f"the oldest snapshot is {snaps[0].name}, not the server's empty tree"
    assert history and history[0].zxid > first_snapshot, "the history is not after the oldest snapshot"
    assert any(c.zxid < facts["latest_snapshot_zxid"] for c in history), "no recorded change before the newest snapshot"
    assert any(c.zxid > facts["latest_snapshot_zxid"] for c in history), "no recorded change after the newest snapshot"
    facts["first_snapshot"] = snaps[0].name
    assert facts["latest_snapshot_zxid"] < last_zxid, "no transactions after the newest snapshot"
    for f in logs:  # preAllocSize=16 took effect: no 64 MiB padding
        assert f.stat().st_size < 1 << 20, f"{f.name} is {f.stat().st_size} bytes: preAllocSize ignored"
    return tree, facts, sorted(history, key=lambda c: c.zxid)
