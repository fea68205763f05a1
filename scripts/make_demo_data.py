"""Dev-time generator of kaudit's demo cluster (``pipelines/demo/data/`` + ``faults.json``).

Run once, commit the output:  ``.venv/bin/python scripts/make_demo_data.py``

1. ZooKeeper: drives the real Debian ZooKeeper 3.8 server (``tests/zk_server.py``) with kazoo,
   one session per broker / consumer, into a Kafka-shaped tree (0.8+ layout of FORMATS.md
   sec. 4 plus one 0.7-layout topic and group), then kills the server with SIGKILL while the
   sessions are open (a crash: the EPHEMERAL owners stay in the files) and keeps the small
   ``version-2/`` files (``preAllocSize=16`` KB, small ``snapCount``: snapshots AND logs after).
2. Kafka: ``__consumer_offsets-<N>`` and data-topic segments, encoded with kafka-python through
   ``tests/builders/segments.py`` (independent of kaudit's decoders).
3. ``faults.json``: every planted fault and every expected figure, computed here from the rules
   of CONTRACT.md / FORMATS.md by code that shares nothing with ``pipelines/`` (the ZooKeeper
   side from the tree as read back through kazoo before the crash).

Deterministic except for what the ZooKeeper server decides itself (zxids, session ids, times,
where it rolls snapshots).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

DATA = REPO / "pipelines" / "demo" / "data"
MANIFEST = REPO / "pipelines" / "demo" / "faults.json"
OFFSETS_TOPIC_PARTITIONS = 50
ZK_CONF = "preAllocSize=16\nsnapCount=200\nmaxSessionTimeout=180000\n"
SESSION_TIMEOUT_S = 120.0  # long enough for a test to restore the dir and read the ephemerals

STATUSES = ("duplicate_owner", "unexpected_partition", "unknown_owner", "unowned", "wrong_owner", "ok")


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=timezone.utc).timestamp() * 1000)


# =============================================================================================
# The cluster (one place: topics, brokers, groups; everything below derives from it)
# =============================================================================================

BROKERS = {1: "kafka-1.demo.internal", 2: "kafka-2.demo.internal", 3: "kafka-3.demo.internal"}
LEGACY_BROKERS = {7: "legacy-kafka-7.demo.internal", 8: "legacy-kafka-8.demo.internal"}  # 0.7 layout
CLUSTER_ID = "kAuDiTdEmO-cLuStEr_01a"  # 22 chars of [a-zA-Z0-9_-]
CONTROLLER = 2

# 0.8+ topics: name -> number of partitions
TOPICS = {"orders": 6, "payments": 4, "clicks": 16, "tmp-backfill": 2, "__consumer_offsets": OFFSETS_TOPIC_PARTITIONS}
PENDING_DELETION = ["tmp-backfill"]
# 0.7 topic: name -> {broker_id: nPartitions}
LEGACY_TOPICS = {"legacy-events": {7: 2, 8: 2}}


@dataclass
class ZkConsumer:
    consumer_id: str
    subscription: dict[str, int]  # topic -> streams
    legacy: bool = False  # 0.7 registration value {"topic": streams}
    timestamp: int = 0


@dataclass
class ZkGroup:
    name: str
    consumers: list[ZkConsumer]
    # topic -> {partition name (as the znode is named) -> thread id}; derived from the range
    # assignment unless overridden by a planted fault below
    owner_overrides: dict[str, dict[str, str | None]] = field(default_factory=dict)
    ghost_owners: dict[str, dict[str, str]] = field(default_factory=dict)  # owners from an unregistered session


AFTER_SNAPSHOT = "search"  # this group only in the transaction log after the newest snapshot
GHOST = "search_idx-9.demo.internal-1763500000000-deadbeef"  # a consumer that is not registered

ZK_GROUPS = [
    # wrong owner: two registered consumers, owners of p1/p2 swapped vs range; also dual-commit
    ZkGroup(
        "billing",
        [
            ZkConsumer(
                "billing_pay-app-1.demo.internal-1763625600123-5f3a2c1e", {"payments": 1}, timestamp=1763625600123
            ),
            ZkConsumer(
                "billing_pay-app-2.demo.internal-1763625600456-9b7d4e20", {"payments": 1}, timestamp=1763625600456
            ),
        ],
        owner_overrides={
            "payments": {
                "1": "billing_pay-app-2.demo.internal-1763625600456-9b7d4e20-0",
                "2": "billing_pay-app-1.demo.internal-1763625600123-5f3a2c1e-0",
            }
        },
    ),
    # range with remainders and 14 threads: "-10" sorts before "-2"
    ZkGroup(
        "analytics",
        [
            ZkConsumer(
                "analytics_stream-a.demo.internal-1763625601000-0c1d2e3f", {"clicks": 12}, timestamp=1763625601000
            ),
            ZkConsumer(
                "analytics_stream-b.demo.internal-1763625602000-7a8b9c0d",
                {"clicks": 2, "orders": 1},
                timestamp=1763625602000,
            ),
        ],
    ),
    # the 0.7 layout: partitions named broker-partition
    ZkGroup(
        "legacy-indexer",
        [
            ZkConsumer("legacy-indexer_old-1.demo.internal-1300000000000", {"legacy-events": 2}, legacy=True),
            ZkConsumer("legacy-indexer_old-2.demo.internal-1300000001000", {"legacy-events": 1}, legacy=True),
        ],
    ),
    # an inactive group: offsets only, nobody registered (no audit rows)
    ZkGroup("archiver", []),
    # unknown owner (p3), unowned (p5), owned partition beyond the metadata (p6)
    ZkGroup(
        "search",
        [
            ZkConsumer("search_idx-1.demo.internal-1763625603000-11aa22bb", {"orders": 1}, timestamp=1763625603000),
            ZkConsumer("search_idx-2.demo.internal-1763625604000-33cc44dd", {"orders": 1}, timestamp=1763625604000),
            ZkConsumer("search_idx-3.demo.internal-1763625605000-55ee66ff", {"orders": 1}, timestamp=1763625605000),
        ],
        owner_overrides={"orders": {"3": None, "5": None, "6": "search_idx-3.demo.internal-1763625605000-55ee66ff-0"}},
        ghost_owners={"orders": {"3": f"{GHOST}-0"}},
    ),
]

# --- Kafka side -----------------------------------------------------------------------------

T0 = ms("2026-11-20T08:00:00")
ROUND_MS = 10 * 60 * 1000
ROUNDS = 24  # commits every 10 minutes for 4 hours
DATA_FROM, DATA_TO = ms("2026-11-20T06:00:00"), ms("2026-11-20T12:30:00")

# data-topic partitions: (topic, partition) -> (log start, number of records); segment roll points
LOG_START = {("payments", p): 1000 + 100 * p for p in range(4)}
RECORDS = {
    **{("orders", p): 420 + 35 * p for p in range(6)},
    **{("payments", p): 380 + 20 * p for p in range(4)},
    **{("clicks", p): 150 + 10 * p for p in range(16)},
}
SEGMENT_ROLLS = {("clicks", 0): [87]}  # new segment at this many records after the start


@dataclass
class Member:
    member_id: str
    client_id: str
    topics: list[str]
    assigned: dict[str, list[int]]
    instance_id: str | None = None
    sub_version: int = 0
    asg_version: int = 0


@dataclass
class Generation:
    at_round: float  # written just before this commit round
    generation: int
    members: list[Member]
    protocol: str | None = "range"


@dataclass
class KafkaGroup:
    name: str
    topics: dict[str, list[int]]  # partitions it commits
    generations: list[Generation] = field(default_factory=list)
    value_version: int = 3
    lag_at_end: int = 7


def _m(group: str, n: int, uuid: str, topics, assigned, **kw) -> Member:
    client = f"consumer-{group}-{n}"
    return Member(f"{client}-{uuid}", client, topics, assigned, **kw)


KAFKA_GROUPS = [
    # one wrong owner vs RangeAssignor (p2 given to member 1) + the planted regression
    KafkaGroup(
        "fraud-detector",
        {"payments": [0, 1, 2, 3]},
        [
            Generation(
                0,
                1,
                [
                    _m(
                        "fraud-detector",
                        1,
                        "8c0e4c2a-0d3f-4bde-9a61-2f1e7f1c0a01",
                        ["payments"],
                        {"payments": [0, 1, 2, 3]},
                    )
                ],
            ),
            Generation(
                6,
                2,
                [
                    _m(
                        "fraud-detector",
                        1,
                        "8c0e4c2a-0d3f-4bde-9a61-2f1e7f1c0a01",
                        ["payments"],
                        {"payments": [0, 1, 2]},
                        sub_version=1,
                    ),
                    _m(
                        "fraud-detector",
                        2,
                        "1b7d3e55-52a4-4c1e-8f0b-6d2c9e4a7b02",
                        ["payments"],
                        {"payments": [3]},
                        sub_version=1,
                    ),
                ],
            ),
        ],
        lag_at_end=11,
    ),
    # duplicate owner: two members assigned orders-1
    KafkaGroup(
        "recommendations",
        {"orders": [0, 1, 2, 3, 4, 5]},
        [
            Generation(
                0,
                3,
                [
                    _m(
                        "recommendations",
                        1,
                        "0f4e6a1c-3b2d-4e5f-8a9b-0c1d2e3f4a01",
                        ["orders"],
                        {"orders": [0, 1]},
                        sub_version=2,
                    ),
                    _m(
                        "recommendations",
                        2,
                        "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c02",
                        ["orders"],
                        {"orders": [1, 2, 3]},
                        sub_version=2,
                    ),
                    _m(
                        "recommendations",
                        3,
                        "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c03",
                        ["orders"],
                        {"orders": [4, 5]},
                        sub_version=2,
                    ),
                ],
            )
        ],
        lag_at_end=3,
    ),
    # unowned: orders-5 assigned to nobody
    KafkaGroup(
        "notifications",
        {"orders": [0, 1, 2, 3, 4]},
        [
            Generation(
                0,
                5,
                [
                    _m(
                        "notifications",
                        1,
                        "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e01",
                        ["orders"],
                        {"orders": [0, 1, 2]},
                        sub_version=3,
                        asg_version=1,
                    ),
                    _m(
                        "notifications",
                        2,
                        "6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b02",
                        ["orders"],
                        {"orders": [3, 4]},
                        sub_version=3,
                        asg_version=1,
                    ),
                ],
            )
        ],
        lag_at_end=25,
    ),
    # static members: group.instance.id holders sort first (by instance id), then member ids
    KafkaGroup(
        "shipping",
        {"orders": [0, 1, 2, 3, 4, 5]},
        [
            Generation(
                0,
                2,
                [
                    Member(
                        "consumer-shipping-3-0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d03",
                        "consumer-shipping-3",
                        ["orders"],
                        {"orders": [4, 5]},
                    ),
                    Member(
                        "ship-2-4e5f6a7b-8c9d-4e0f-8a1b-2c3d4e5f6a02",
                        "shipping-ship-2",
                        ["orders"],
                        {"orders": [2, 3]},
                        instance_id="ship-2",
                    ),
                    Member(
                        "ship-1-f9e8d7c6-b5a4-4392-8170-6f5e4d3c2b01",
                        "shipping-ship-1",
                        ["orders"],
                        {"orders": [0, 1]},
                        instance_id="ship-1",
                    ),
                ],
            )
        ],
        lag_at_end=0,
    ),
    # exactly-once app: transactional commits; one aborted LOWER commit, one pending at the end
    KafkaGroup(
        "ledger-writer",
        {"payments": [0, 1, 2, 3]},
        [
            Generation(
                0,
                1,
                [
                    _m(
                        "ledger-writer",
                        1,
                        "3d4e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f01",
                        ["payments"],
                        {"payments": [0, 1, 2, 3]},
                    )
                ],
            )
        ],
        lag_at_end=2,
    ),
    # an expired group: a few commits, then an Empty group, then tombstones
    KafkaGroup("old-etl", {"payments": [0, 1]}, [Generation(0, 7, [], protocol=None)], value_version=2),
    # ZooKeeper-era consumer with dual.commit: offsets in both ZooKeeper and Kafka, no GroupMetadata
    KafkaGroup("billing", {"payments": [0, 1, 2, 3]}, [], value_version=1, lag_at_end=5),
]

REGRESSION = ("fraud-detector", "payments", 0, 15)  # group, topic, partition, round: commit(13) again
TXN_PRODUCER = (4001, 0)  # ledger-writer's transactional producer id, epoch
ABORTED = ("ledger-writer", "payments", 1, 10)  # round with an extra aborted txn committing commit(3)
CORRUPT = ("recommendations", 16)  # this round's batch gets a flipped byte (CRC mismatch)
OLD_ETL_ROUNDS, OLD_ETL_TOMBSTONE_ROUND = 6, 20
BILLING_ZK_ROUND = 20  # the ZooKeeper offsets of billing are its Kafka commits of this round
CODECS = {  # group -> (magic, codec) per round
    "billing": lambda r: (
        (0, "none")
        if r < 2
        else (0, "gzip")
        if r == 2
        else (0, "snappy")
        if r == 3
        else (1, "none")
        if r < 6
        else (1, "lz4")
        if r == 6
        else (1, "gzip")
        if r == 7
        else (2, "none")
    ),
    "fraud-detector": lambda r: (2, "snappy") if r % 5 == 0 else (2, "none"),
    "recommendations": lambda r: (2, "gzip") if r % 4 == 1 else (2, "none"),
    "notifications": lambda r: (2, "lz4") if r % 3 == 0 else (2, "none"),
    "shipping": lambda r: (2, "zstd"),
}


def log_end(topic: str, p: int) -> int:
    return LOG_START.get((topic, p), 0) + RECORDS[(topic, p)]


def commit_at(group: KafkaGroup, topic: str, p: int, r: int) -> int:
    """The offset ``group`` commits for ``topic-p`` in round ``r`` (increasing in r)."""
    start, end = LOG_START.get((topic, p), 0), log_end(topic, p)
    span = end - start - group.lag_at_end - 3 * p
    return start + span * (r + 1) // ROUNDS


# =============================================================================================
# Independent audit rules (CONTRACT.md: assignment_audit status; FORMATS.md sec. 5)
# =============================================================================================


def range_assign(partitions: list, consumers: list[str]) -> dict:
    """partition -> consumer; both lists already in the assignor's order."""
    out = {}
    if not consumers:
        return out
    per, extra = divmod(len(partitions), len(consumers))
    for i, c in enumerate(consumers):
        start = per * i + min(i, extra)
        for part in partitions[start : start + per + (1 if i < extra else 0)]:
            out[part] = c
    return out


def audit_status(expected: str | None, observed: list[str], in_metadata: bool, registered: set[str]) -> str:
    owners = set(observed)
    if len(owners) > 1:
        return "duplicate_owner"
    if owners and not in_metadata:
        return "unexpected_partition"
    if owners and not owners <= registered:
        return "unknown_owner"
    if expected is not None and not owners:
        return "unowned"
    if owners and owners != {expected}:
        return "wrong_owner"
    return "ok"


def zk_audit(tree: dict[str, bytes]) -> list[dict]:
    """Audit rows of the ZooKeeper groups from a {path: data} walk of the tree."""

    def children(path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in tree if p.startswith(prefix)})

    # topic metadata: topic -> sorted [(broker_id | None, partition)]
    meta: dict[str, list] = {}
    for topic in children("/brokers/topics"):
        base = f"/brokers/topics/{topic}"
        if tree[base]:
            meta[topic] = sorted((None, int(p)) for p in json.loads(tree[base])["partitions"])
        else:  # 0.7: /brokers/topics/<t>/<broker_id> -> nPartitions
            meta[topic] = sorted((int(b), p) for b in children(base) for p in range(int(tree[f"{base}/{b}"].decode())))

    def part_key(name: str):
        if "-" in name:
            b, p = name.split("-", 1)
            return int(b), int(p)
        return None, int(name)

    rows = []
    for group in children("/consumers"):
        threads_by_topic: dict[str, list[str]] = defaultdict(list)
        for cid in children(f"/consumers/{group}/ids"):
            reg = json.loads(tree[f"/consumers/{group}/ids/{cid}"])
            subs = reg["subscription"] if "subscription" in reg else reg
            for topic, streams in subs.items():
                threads_by_topic[topic] += [f"{cid}-{n}" for n in range(int(streams))]
        registered = {t for ts in threads_by_topic.values() for t in ts}
        expected: dict[tuple, str] = {}
        for topic, threads in threads_by_topic.items():
            for (b, p), owner in range_assign(meta.get(topic, []), sorted(threads)).items():
                expected[(topic, b, p)] = owner
        observed: dict[tuple, list[str]] = {}
        for topic in children(f"/consumers/{group}/owners"):
            for name in children(f"/consumers/{group}/owners/{topic}"):
                b, p = part_key(name)
                observed[(topic, b, p)] = [tree[f"/consumers/{group}/owners/{topic}/{name}"].decode()]
        for key in sorted(set(expected) | set(observed), key=lambda k: (k[0], k[1] or -1, k[2])):
            topic, b, p = key
            in_meta = (b, p) in meta.get(topic, []) and topic in threads_by_topic
            rows.append(
                dict(
                    source="zookeeper",
                    group_id=group,
                    topic=topic,
                    partition=p,
                    broker_id=b,
                    expected_owner=expected.get(key),
                    observed_owners=observed.get(key, []),
                    status=audit_status(expected.get(key), observed.get(key, []), in_meta, registered),
                )
            )
    return rows


def kafka_audit(groups: list[KafkaGroup], tombstoned: set[str]) -> list[dict]:
    """Audit rows of the Kafka groups from their latest GroupMetadata (RangeAssignor)."""
    rows = []
    for g in groups:
        if not g.generations or g.name in tombstoned:
            continue
        members = g.generations[-1].members
        registered = {m.member_id for m in members}
        order = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
        expected, observed = {}, defaultdict(list)
        for topic in sorted({t for m in members for t in m.topics}):
            subs = [m.member_id for m in order if topic in m.topics]
            for p, owner in range_assign(list(range(TOPICS[topic])), subs).items():
                expected[(topic, p)] = owner
        for m in members:
            for topic, ps in m.assigned.items():
                for p in ps:
                    observed[(topic, p)].append(m.member_id)
        for key in sorted(set(expected) | set(observed)):
            topic, p = key
            in_meta = topic in TOPICS and p < TOPICS[topic] and any(topic in m.topics for m in members)
            obs = sorted(observed.get(key, []))
            rows.append(
                dict(
                    source="kafka",
                    group_id=g.name,
                    topic=topic,
                    partition=p,
                    broker_id=None,
                    expected_owner=expected.get(key),
                    observed_owners=obs,
                    status=audit_status(expected.get(key), obs, in_meta, registered),
                )
            )
    return rows


# =============================================================================================
# ZooKeeper: drive the real server
# =============================================================================================


def zk_owners(group: ZkGroup) -> dict[str, dict[str, str | None]]:
    """topic -> {znode partition name -> thread id or None}: range assignment + overrides."""
    threads_by_topic = defaultdict(list)
    for c in group.consumers:
        for topic, streams in c.subscription.items():
            threads_by_topic[topic] += [f"{c.consumer_id}-{n}" for n in range(streams)]
    out: dict[str, dict[str, str | None]] = {}
    for topic, threads in threads_by_topic.items():
        if topic in LEGACY_TOPICS:
            parts = sorted((b, p) for b, n in LEGACY_TOPICS[topic].items() for p in range(n))
            names = [f"{b}-{p}" for b, p in parts]
        else:
            names = [str(p) for p in range(TOPICS[topic])]
        out[topic] = range_assign(names, sorted(threads))
        out[topic].update(group.owner_overrides.get(topic, {}))
    return out


def zk_offsets(group: ZkGroup) -> dict[str, dict[str, int]]:
    """The offsets the group keeps in ZooKeeper (next offset to consume)."""
    if group.name == "billing":
        kg = next(g for g in KAFKA_GROUPS if g.name == "billing")
        return {"payments": {str(p): commit_at(kg, "payments", p, BILLING_ZK_ROUND) for p in range(4)}}
    if group.name == "legacy-indexer":
        return {"legacy-events": {f"{b}-{p}": 5000 + 1000 * b + 17 * p for b in (7, 8) for p in range(2)}}
    if group.name == "archiver":
        return {"orders": {str(p): 100 + 10 * p for p in range(6)}}
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for topic, owners in zk_owners(group).items():
        for name in owners:
            p = int(name)
            if p < TOPICS[topic]:
                out[topic][name] = log_end(topic, p) - 4 - (p % 5) * 9
    return out


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


def roll_snapshot(admin, version2: Path) -> None:
    """Commit offsets of the inactive group until the server writes a new snapshot, so that
    what follows (sessions, ephemerals, updates) lives only in the transaction log."""
    before = set(version2.glob("snapshot.*"))
    for _ in range(4 * int(ZK_CONF.split("snapCount=")[1].split()[0])):
        path = "/consumers/archiver/offsets/orders/0"
        admin.set(path, str(int(admin.get(path)[0]) + 1).encode())
        if set(version2.glob("snapshot.*")) - before:
            time.sleep(1.0)  # let the snapshot thread finish writing
            return
    raise RuntimeError("the server wrote no snapshot")


def build_zookeeper(work: Path) -> tuple[dict, dict]:
    """Drive a real server into a Kafka-shaped tree; returns ({path: data}, zk facts)."""
    from kazoo.client import KazooClient
    from testkit.zk_server import start_zk

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

        # consumer groups: each consumer registers and claims its partitions from its own session
        version2 = server.data_dir / "version-2"
        for group in ZK_GROUPS:
            if group.name == AFTER_SNAPSHOT:
                roll_snapshot(admin, version2)
            base = f"/consumers/{group.name}"
            for sub in ("ids", "owners", "offsets"):
                admin.ensure_path(f"{base}/{sub}")
            owners = zk_owners(group)
            sessions = {}
            for c in group.consumers:
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
                s.create(f"{base}/ids/{c.consumer_id}", reg, ephemeral=True)
            ghost = session() if group.ghost_owners else None
            for topic, parts in owners.items():
                admin.ensure_path(f"{base}/owners/{topic}")
                for name, thread in parts.items():
                    if thread is None:
                        continue
                    s = sessions[thread.rsplit("-", 1)[0]]
                    s.create(f"{base}/owners/{topic}/{name}", thread.encode(), ephemeral=True)
            for topic, parts in group.ghost_owners.items():
                for name, thread in parts.items():
                    ghost.create(f"{base}/owners/{topic}/{name}", thread.encode(), ephemeral=True)
            # offsets: committed in three rounds (create, then two updates)
            final = zk_offsets(group)
            for k, frac in enumerate((0.5, 0.8, 1.0)):
                for topic, parts in final.items():
                    for name, off in parts.items():
                        path = f"{base}/offsets/{topic}/{name}"
                        value = str(int(off * frac) if frac < 1 else off).encode()
                        if k == 0:
                            admin.create(path, value, makepath=True)
                        else:
                            admin.set(path, value)

        # make sure the newest snapshot is followed by logged transactions
        for _ in range(20):
            time.sleep(1.0)  # let a snapshot in flight finish
            last_zxid = server_zxid(server.port)
            snaps = sorted(int(f.name.split(".")[1], 16) for f in version2.glob("snapshot.*"))
            if snaps and last_zxid - snaps[-1] >= 25:
                break
            for p in range(6):  # more offset commits of the inactive group
                path = f"/consumers/archiver/offsets/orders/{p}"
                admin.set(path, str(int(admin.get(path)[0]) + 1).encode())
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
        "paths": {
            p: {"data": tree[p].decode(), "ephemeral": bool(stats[p].ephemeralOwner), "version": stats[p].version}
            for p in sorted(tree)
            if p.startswith("/consumers/") or p.startswith("/brokers/ids/")
        },
    }
    target = DATA / "zookeeper" / "version-2"
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
    assert facts["latest_snapshot_zxid"] < last_zxid, "no transactions after the newest snapshot"
    for f in logs:  # preAllocSize=16 took effect: no 64 MiB padding
        assert f.stat().st_size < 1 << 20, f"{f.name} is {f.stat().st_size} bytes: preAllocSize ignored"
    return tree, facts


# =============================================================================================
# Kafka segments
# =============================================================================================


def build_data_segments() -> dict:
    """Data-topic segments: batches of tiny records; returns {topic-p: log start/end, max ts}."""
    from testkit.segments import batch, segment_name, write_segment

    sizes = [37, 50, 23, 64, 41, 58, 12]
    out = {}
    for (topic, p), n in sorted(RECORDS.items()):
        start = LOG_START.get((topic, p), 0)
        rolls = [start + r for r in SEGMENT_ROLLS.get((topic, p), [])]
        counts, left, i = [], n, p
        while left:
            counts.append(min(sizes[i % len(sizes)], left))
            left -= counts[-1]
            i += 1
        segments: dict[int, list[bytes]] = {start: []}
        off, max_ts = start, None
        for j, k in enumerate(counts):
            ts = DATA_FROM + (DATA_TO - DATA_FROM) * (j + 1) // len(counts)
            if rolls and off >= rolls[0]:
                segments[off] = []
                rolls.pop(0)
            recs = [(None, b"%s-%d-%d" % (topic.encode(), p, off + x)) for x in range(k)]
            codec = "lz4" if j % 4 == 3 else "zstd" if j % 7 == 5 else "none"
            timestamps = [ts - (k - 1 - x) * 10 for x in range(k)]
            segments[max(segments)].append(
                batch(
                    recs,
                    base_offset=off,
                    codec=codec,
                    timestamp_ms=ts,
                    timestamps=timestamps,
                    producer_id=9000 + p,
                    producer_epoch=0,
                    base_sequence=off - start,
                )
            )
            off += k
            max_ts = ts
        for base, batches in segments.items():
            write_segment(DATA / "kafka-logs" / f"{topic}-{p}" / segment_name(base), batches)
        out[f"{topic}-{p}"] = dict(
            topic=topic,
            partition=p,
            log_start_offset=start,
            log_end_offset=off,
            max_timestamp=max_ts,
            segments=[segment_name(b) for b in segments],
            batches=len(counts),
            records=n,
        )
    return out


@dataclass
class Commit:
    group: str
    topic: str
    partition: int
    offset: int | None  # None: tombstone
    commit_ts: int
    log_offset: int = -1
    txn: str | None = None  # committed / aborted / pending for transactional commits
    corrupt: bool = False


def build_offsets_segments() -> dict:
    """``__consumer_offsets`` segments; returns the facts of the manifest's Kafka part."""
    from testkit.segments import (
        assignment,
        batch,
        control_batch,
        group_metadata_key,
        group_metadata_value,
        group_partition,
        offset_commit_key,
        offset_commit_value,
        segment_name,
        subscription,
        write_segment,
    )

    # events per offsets partition in time order: (ts, seq, kind, payload)
    events: dict[int, list] = defaultdict(list)
    seq = iter(range(1 << 30))
    groups = {g.name: g for g in KAFKA_GROUPS}

    def add(group: str, ts: int, kind: str, payload) -> None:
        events[group_partition(group, OFFSETS_TOPIC_PARTITIONS)].append((ts, next(seq), kind, group, payload))

    for g in KAFKA_GROUPS:
        for gen in g.generations:
            add(g.name, T0 + int(gen.at_round * ROUND_MS) - 30_000, "group", gen)
        rounds = range(OLD_ETL_ROUNDS) if g.name == "old-etl" else range(ROUNDS)
        for r in rounds:
            ts = T0 + r * ROUND_MS + 1_000 * (1 + KAFKA_GROUPS.index(g))
            commits = [Commit(g.name, t, p, commit_at(g, t, p, r), ts) for t, ps in g.topics.items() for p in ps]
            if (g.name, r) == (REGRESSION[0], REGRESSION[3]):
                for c in commits:
                    if (c.topic, c.partition) == REGRESSION[1:3]:
                        c.offset = commit_at(g, c.topic, c.partition, r - 2)
            if g.name == "ledger-writer":
                add(g.name, ts, "txn", (commits, "pending" if r == ROUNDS - 1 else "committed"))
                if r == ABORTED[3]:
                    lower = [Commit(g.name, ABORTED[1], ABORTED[2], commit_at(g, ABORTED[1], ABORTED[2], 3), ts + 500)]
                    add(g.name, ts + 500, "txn", (lower, "aborted"))
            else:
                add(g.name, ts, "commits", (commits, r))
        if g.name == "old-etl":
            ts = T0 + OLD_ETL_TOMBSTONE_ROUND * ROUND_MS + 7_000
            add(
                g.name,
                ts,
                "commits",
                ([Commit(g.name, t, p, None, ts) for t, ps in g.topics.items() for p in ps], None),
            )
            add(g.name, ts + 1, "group-tombstone", None)

    all_commits: list[Commit] = []
    files, corrupt_location = {}, None
    group_records = control_records = 0
    tombstoned_groups: set[str] = set()
    roll_partition = group_partition("recommendations", OFFSETS_TOPIC_PARTITIONS)
    for part, evs in sorted(events.items()):
        evs.sort(key=lambda e: (e[0], e[1]))
        segments: list[tuple[int, list[bytes]]] = [(0, [])]  # (base offset, batches)
        offset, txn_seq = 0, 0
        pid, epoch = TXN_PRODUCER

        def append(data: bytes, segments=segments) -> None:
            segments[-1][1].append(data)

        for ts, _, kind, group, payload in evs:
            g = groups[group]
            if kind == "group":
                gen: Generation = payload
                members = [
                    dict(
                        member_id=m.member_id,
                        group_instance_id=m.instance_id,
                        client_id=m.client_id,
                        client_host=f"/10.20.{KAFKA_GROUPS.index(g)}.{i + 11}",
                        rebalance_timeout=300000,
                        session_timeout=45000,
                        subscription=subscription(
                            m.topics,
                            version=m.sub_version,
                            owned=m.assigned if m.sub_version >= 1 else None,
                            generation=gen.generation - 1 if m.sub_version >= 2 else -1,
                        ),
                        assignment=assignment(m.assigned, version=m.asg_version),
                    )
                    for i, m in enumerate(gen.members)
                ]
                value = group_metadata_value(
                    protocol_type="consumer",
                    generation=gen.generation,
                    protocol=gen.protocol,
                    leader=gen.members[0].member_id if gen.members else None,
                    state_ts=ts,
                    members=members,
                    version=3,
                )
                append(batch([(group_metadata_key(group), value)], base_offset=offset, timestamp_ms=ts))
                offset += 1
                group_records += 1
            elif kind == "group-tombstone":
                append(batch([(group_metadata_key(group), None)], base_offset=offset, timestamp_ms=ts))
                offset += 1
                group_records += 1
                tombstoned_groups.add(group)
            elif kind == "commits":
                commits, r = payload
                magic, codec = CODECS.get(group, lambda r: (2, "none"))(r if r is not None else 0)
                recs = []
                for c in commits:
                    key = offset_commit_key(c.group, c.topic, c.partition, version=1)
                    if c.offset is None:
                        value = None
                    elif g.value_version == 1:
                        value = offset_commit_value(
                            c.offset, commit_ts=c.commit_ts, expire_ts=c.commit_ts + 7 * 86_400_000, version=1
                        )
                    else:
                        value = offset_commit_value(
                            c.offset,
                            commit_ts=c.commit_ts,
                            leader_epoch=2 if g.value_version == 3 else -1,
                            metadata="" if c.partition % 2 else f"host=worker-{c.partition}",
                            version=g.value_version,
                        )
                    c.log_offset = offset + len(recs)
                    recs.append((key, value))
                data = batch(recs, base_offset=offset, magic=magic, codec=codec, timestamp_ms=ts)
                if (group, r) == CORRUPT:
                    name = f"__consumer_offsets-{part}/{segment_name(segments[-1][0])}"
                    corrupt_location = (name, sum(map(len, segments[-1][1])), len(recs))
                    buf = bytearray(data)
                    buf[-3] ^= 0x5A  # inside the last record: the CRC-32C no longer matches
                    data = bytes(buf)
                    for c in commits:
                        c.corrupt = True
                append(data)
                all_commits += commits
                offset += len(recs)
            elif kind == "txn":
                commits, state = payload
                recs = []
                for c in commits:
                    c.txn = state
                    c.log_offset = offset + len(recs)
                    recs.append(
                        (
                            offset_commit_key(c.group, c.topic, c.partition, version=1),
                            offset_commit_value(c.offset, commit_ts=c.commit_ts, leader_epoch=2, version=3),
                        )
                    )
                append(
                    batch(
                        recs,
                        base_offset=offset,
                        timestamp_ms=ts,
                        producer_id=pid,
                        producer_epoch=epoch,
                        base_sequence=txn_seq,
                        transactional=True,
                    )
                )
                txn_seq += len(recs)
                offset += len(recs)
                all_commits += commits
                if state != "pending":
                    append(
                        control_batch(
                            base_offset=offset,
                            producer_id=pid,
                            producer_epoch=epoch,
                            commit=state == "committed",
                            timestamp_ms=ts + 200,
                        )
                    )
                    offset += 1
                    control_records += 1
            if part == roll_partition and offset >= 70 and len(segments) == 1:
                segments.append((offset, []))  # the log rolled: a second segment
        for base, bs in segments:
            name = f"__consumer_offsets-{part}/{segment_name(base)}"
            write_segment(DATA / "kafka-logs" / name, bs)
            files[name] = {"base_offset": base, "batches": len(bs), "bytes": sum(map(len, bs))}
    assert corrupt_location is not None
    return dict(
        commits=all_commits,
        files=files,
        group_records=group_records,
        control_records=control_records,
        tombstoned_groups=tombstoned_groups,
        corrupt=corrupt_location,
    )


# =============================================================================================
# Expected marts figures from the commits (CONTRACT: marts)
# =============================================================================================


def effective(commits: list[Commit]) -> list[Commit]:
    """Commits that the decoder sees (not corrupt) and that count: not aborted, not pending."""
    return [c for c in commits if not c.corrupt and c.txn not in ("aborted", "pending")]


def expected_marts(commits: list[Commit], zk_tree: dict[str, bytes], log_ends: dict) -> dict:
    eff = sorted(effective(commits), key=lambda c: (c.group, c.topic, c.partition, c.log_offset))
    regressions, latest = [], {}
    prev: dict[tuple, Commit] = {}
    for c in eff:
        key = (c.group, c.topic, c.partition)
        if c.offset is None:  # a tombstone deletes the offset
            latest.pop(key, None)
            prev.pop(key, None)
            continue
        if key in prev and c.offset < prev[key].offset:
            regressions.append(
                dict(
                    group_id=c.group,
                    topic=c.topic,
                    partition=c.partition,
                    log_offset=c.log_offset,
                    previous_committed_offset=prev[key].offset,
                    committed_offset=c.offset,
                    regressed_by=prev[key].offset - c.offset,
                    committed_at=c.commit_ts,
                )
            )
        prev[key] = c
        latest[key] = c

    def end_of(topic, p):
        e = log_ends.get(f"{topic}-{p}")
        return e["log_end_offset"] if e else None

    lag = []
    for (g, t, p), c in sorted(latest.items()):
        e = end_of(t, p)
        lag.append(
            dict(
                source="kafka",
                group_id=g,
                topic=t,
                partition=p,
                committed_offset=c.offset,
                log_end_offset=e,
                lag=None if e is None else e - c.offset,
                committed_at=c.commit_ts,
            )
        )
    zk_offs = {}
    for path, data in zk_tree.items():
        parts = path.split("/")
        if len(parts) == 6 and parts[1] == "consumers" and parts[3] == "offsets":
            g, t, name = parts[2], parts[4], parts[5]
            broker, p = (int(name.split("-")[0]), int(name.split("-")[1])) if "-" in name else (None, int(name))
            zk_offs[(g, t, broker, p)] = int(data)
            e = end_of(t, p) if broker is None else None
            lag.append(
                dict(
                    source="zookeeper",
                    group_id=g,
                    topic=t,
                    partition=p,
                    broker_id=broker,
                    committed_offset=int(data),
                    log_end_offset=e,
                    lag=None if e is None else e - int(data),
                    committed_at=None,
                )
            )
    drift = []
    for (g, t, b, p), zk in sorted(zk_offs.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3])):
        if (g, t, p) in latest and b is None:
            k = latest[(g, t, p)].offset
            drift.append(dict(group_id=g, topic=t, partition=p, zk_offset=zk, kafka_offset=k, drift=k - zk))
    return dict(offset_regressions=regressions, consumer_lag=lag, offset_storage_drift=drift)


def counts(rows: list[dict], source: str) -> dict[str, int]:
    out = {s: 0 for s in STATUSES}
    for r in rows:
        if r["source"] == source:
            out[r["status"]] += 1
    return out


def main() -> None:
    from testkit.segments import group_partition

    if DATA.exists():
        shutil.rmtree(DATA)
    DATA.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="kaudit-demo-zk-") as tmp:
        tree, zk = build_zookeeper(Path(tmp))
    log_ends = build_data_segments()
    kafka = build_offsets_segments()
    commits: list[Commit] = kafka["commits"]
    audit = zk_audit(tree) + kafka_audit(KAFKA_GROUPS, kafka["tombstoned_groups"])
    marts = expected_marts(commits, tree, log_ends)
    seg, pos, lost = kafka["corrupt"]
    decodable = [c for c in commits if not c.corrupt]
    manifest = {
        "about": "Planted faults and expected figures of kaudit's demo cluster; written by scripts/make_demo_data.py.",
        "zookeeper": zk,
        "kafka": {
            "log_dir": "kafka-logs",
            "offsets_files": kafka["files"],
            "data_topics": log_ends,
            "offsets_partition_of_group": {
                g.name: group_partition(g.name, OFFSETS_TOPIC_PARTITIONS) for g in KAFKA_GROUPS
            },
        },
        "expected": {
            "assignment": {"zookeeper": counts(audit, "zookeeper"), "kafka": counts(audit, "kafka")},
            "offset_regressions": len(marts["offset_regressions"]),
            "quarantined": 1,
            "znodes": zk["znodes"],
            "offset_commit_records": len(decodable),
            "offset_commit_tombstones": sum(1 for c in decodable if c.offset is None),
            "transactional_commits": {
                s: sum(1 for c in decodable if c.txn == s) for s in ("committed", "aborted", "pending")
            },
            "group_metadata_records": kafka["group_records"],
            "control_records": kafka["control_records"],
            "corrupt_batch_records": sum(1 for c in commits if c.corrupt),
            "offset_storage_drift": len(marts["offset_storage_drift"]),
        },
        "assignment_audit": audit,
        "quarantine": [
            {
                "source": "offsets",
                "file": seg,
                "byte_offset": pos,
                "records_lost": lost,
                "reason": "CRC mismatch (one byte flipped inside the records of the batch)",
            }
        ],
        **marts,
    }
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    e = manifest["expected"]
    print(f"zookeeper: {zk['znodes']} znodes, files {zk['files']}")
    print(
        f"kafka: {len(kafka['files'])} offsets segments, {e['offset_commit_records']} commits, "
        f"{len(log_ends)} data partitions"
    )
    print(json.dumps(e, indent=1))


if __name__ == "__main__":
    main()
