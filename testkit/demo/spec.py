"""The demo cluster, in one place: brokers, topics, ZooKeeper consumer groups, Kafka consumer
groups and the faults planted in them; everything the generator writes derives from it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from testkit.oracle import range_assign

OFFSETS_TOPIC_PARTITIONS = 50


def ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).replace(tzinfo=UTC).timestamp() * 1000)


# --- brokers and topics ---------------------------------------------------------------------

BROKERS = {1: "kafka-1.demo.internal", 2: "kafka-2.demo.internal", 3: "kafka-3.demo.internal"}
LEGACY_BROKERS = {7: "legacy-kafka-7.demo.internal", 8: "legacy-kafka-8.demo.internal"}  # 0.7 layout
CLUSTER_ID = "kAuDiTdEmO-cLuStEr_01a"  # 22 chars of [a-zA-Z0-9_-]
CONTROLLER = 2

# 0.8+ topics: name -> number of partitions
TOPICS = {
    "orders": 6,
    "payments": 4,
    "clicks": 16,
    "tmp-backfill": 2,
    "__consumer_offsets": OFFSETS_TOPIC_PARTITIONS,
    "pageviews": 1,
}
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


AFTER_SNAPSHOT = "search"  # this group and the ones after it only in the transaction log after the newest snapshot
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
    # history (after the newest snapshot): a past wrong owner today's snapshot no longer shows.
    # inv-1 alone owns payments 0-3; inv-2 joins and the owners are written in a wrong order (each
    # claims the other's range share) and stay wrong for WRONG_OWNER_S (a settled state); inv-3 joins and every
    # owner is written right (the owners below: today's, all ok)
    ZkGroup(
        "inventory",
        [
            ZkConsumer(
                "inventory_inv-1.demo.internal-1763625606000-a1b2c3d4", {"payments": 1}, timestamp=1763625606000
            ),
            ZkConsumer(
                "inventory_inv-2.demo.internal-1763625607000-e5f6a7b8", {"payments": 1}, timestamp=1763625607000
            ),
            ZkConsumer(
                "inventory_inv-3.demo.internal-1763625608000-c9d0e1f2", {"payments": 1}, timestamp=1763625608000
            ),
        ],
    ),
]
WRONG_OWNER_GROUP = "inventory"  # the owners written when its second consumer joined are swapped
# how long (wall clock of the ZooKeeper server) the wrong owners stay: longer than the settle
# window, so that they are a settled fault, not a transition
WRONG_OWNER_S = 10.0
# kaudit build's default settle window: the seed 0.8 consumer's rebalance.backoff.ms (2000) x
# rebalance.max.retries (4)
SETTLE_WINDOW_MS = 2000 * 4

# --- Kafka side -----------------------------------------------------------------------------

T0 = ms("2026-11-20T08:00:00")
ROUND_MS = 10 * 60 * 1000
ROUNDS = 24  # commits every 10 minutes for 4 hours
DATA_FROM, DATA_TO = ms("2026-11-20T06:00:00"), ms("2026-11-20T12:30:00")

# data-topic partitions: (topic, partition) -> (log start, number of records); segment roll points
# orders-2: retention deleted its first 250 offsets, then DeleteRecords moved its log start to 300
# (the log dir's log-start-offset-checkpoint); the inactive group archiver committed 120 there
LOG_START = {**{("payments", p): 1000 + 100 * p for p in range(4)}, ("orders", 2): 250}
LOG_START_CHECKPOINT = {("orders", 2): 300}
RECORDS = {
    **{("orders", p): 420 + 35 * p for p in range(6)},
    **{("payments", p): 380 + 20 * p for p in range(4)},
    **{("clicks", p): 150 + 10 * p for p in range(16)},
    ("pageviews", 0): 2400,  # enough to skip more than the dbt var reset_min_records (1000) at once
}
SEGMENT_ROLLS = {("clicks", 0): [87]}  # new segment at this many records after the start
BATCH_SIZES = [37, 50, 23, 64, 41, 58, 12]


def data_batches(topic: str, p: int) -> list[tuple[int, int, int]]:
    """(base offset, records, timestamp) of a data partition's batches: sizes cycling through
    BATCH_SIZES, timestamps evenly from DATA_FROM to DATA_TO; a batch's records are 10 ms apart
    and its last one has the batch's timestamp (its maxTimestamp)."""
    start, left, i = LOG_START.get((topic, p), 0), RECORDS[(topic, p)], p
    counts = []
    while left:
        counts.append(min(BATCH_SIZES[i % len(BATCH_SIZES)], left))
        left -= counts[-1]
        i += 1
    out, off = [], start
    for j, k in enumerate(counts):
        out.append((off, k, DATA_FROM + (DATA_TO - DATA_FROM) * (j + 1) // len(counts)))
        off += k
    return out


def head_offset(topic: str, p: int, at: int) -> int:
    """The log end at ``at``: one past the last batch whose timestamp is at or before it."""
    return max((b + k for b, k, ts in data_batches(topic, p) if ts <= at), default=LOG_START.get((topic, p), 0))


def record_at(topic: str, p: int, offset: int) -> int | None:
    """The timestamp of the record at ``offset`` as the batch headers tell it: the first batch
    ending past the offset, its first record's (CreateTime); None past the log end."""
    for b, k, ts in data_batches(topic, p):
        if offset < b + k:
            return ts - (k - 1) * 10
    return None


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


# notifications' member 2 before it left, and after it came back (a new member id)
STORM_MEMBER_2 = ("9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b02", "6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b02")


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
    # unowned: orders-5 assigned to nobody; a rebalance storm before it: member 2 left and came
    # back, five generations within 20 minutes (more than the dbt var rebalance_storm_per_hour, 3)
    KafkaGroup(
        "notifications",
        {"orders": [0, 1, 2, 3, 4]},
        [
            *[
                Generation(
                    k / 2,
                    k + 1,
                    [
                        _m(
                            "notifications",
                            1,
                            "2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e01",
                            ["orders"],
                            {"orders": [0, 1, 2] if k % 2 else [0, 1, 2, 3, 4, 5]},
                            sub_version=3,
                            asg_version=1,
                        ),
                        *(
                            [
                                _m(
                                    "notifications",
                                    2,
                                    STORM_MEMBER_2[k // 2],
                                    ["orders"],
                                    {"orders": [3, 4, 5]},
                                    sub_version=3,
                                    asg_version=1,
                                )
                            ]
                            if k % 2
                            else []
                        ),
                    ],
                )
                for k in range(4)
            ],
            Generation(
                2,
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
            ),
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
    # reset to latest (RESET_TO_LATEST): consumes pageviews slowly, then jumps to the head
    KafkaGroup(
        "sessionizer",
        {"pageviews": [0]},
        [
            Generation(
                0,
                1,
                [_m("sessionizer", 1, "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2901", ["pageviews"], {"pageviews": [0]})],
            )
        ],
    ),
]

REGRESSION = ("fraud-detector", "payments", 0, 15)  # group, topic, partition, round: commit(13) again
# group, topic, partition, round: SLOW_STEP records a round before it, then the commit jumps to the
# head at commit time (kafka-consumer-groups --reset-offsets --to-latest) and keeps up after it
RESET_TO_LATEST = ("sessionizer", "pageviews", 0, 12)
SLOW_STEP = 15
STORM_GROUP = "notifications"
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


def generation_ts(gen: Generation) -> int:
    """When a generation's GroupMetadata record is written (its state timestamp)."""
    return T0 + int(gen.at_round * ROUND_MS) - 30_000


def commit_ts(group: KafkaGroup, r: int) -> int:
    """When ``group`` commits in round ``r``."""
    return T0 + r * ROUND_MS + 1_000 * (1 + KAFKA_GROUPS.index(group))


def commit_at(group: KafkaGroup, topic: str, p: int, r: int) -> int:
    """The offset ``group`` commits for ``topic-p`` in round ``r`` (increasing in r)."""
    start, end = LOG_START.get((topic, p), 0), log_end(topic, p)
    if (group.name, topic, p) == RESET_TO_LATEST[:3]:
        if r < RESET_TO_LATEST[3]:
            return start + SLOW_STEP * (r + 1)
        return head_offset(topic, p, commit_ts(group, r))
    span = end - start - group.lag_at_end - 3 * p
    return start + span * (r + 1) // ROUNDS


# --- what the ZooKeeper groups own and commit --------------------------------------------------


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
