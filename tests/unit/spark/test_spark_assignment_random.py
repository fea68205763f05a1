"""Randomised agreement with kafka-python's own RangePartitionAssignor and
RoundRobinPartitionAssignor (an independent implementation): a few hundred random groups,
all computed by one Spark plan per assignor family."""

import random
from dataclasses import dataclass
from datetime import UTC, datetime

from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from pipelines.spark import assignment_kafka as ak
from pipelines.spark.assignment_zk import expected_assignment as zk_expected
from pipelines.spark.schemas import table_schema

TS = datetime(2024, 1, 1, tzinfo=UTC)
CASES = 150  # per family


@dataclass
class _Sub:
    topics: list


@dataclass
class _Member:  # what kafka-python's assign() reads from a JoinGroup member
    member_id: str
    group_instance_id: str | None
    metadata: _Sub


class _Cluster:  # partition counts, what assign() reads from ClusterMetadata
    def __init__(self, counts):
        self.counts = counts

    def partitions_for_topic(self, topic):
        n = self.counts.get(topic)
        return None if n is None else set(range(n))


def _oracle(assignor, members, counts, group):
    out = {}
    for member_id, assignment in assignor.assign(_Cluster(counts), members).items():
        for topic, parts in assignment.assigned_partitions:
            for p in parts:
                out[(group, topic, p)] = member_id
    return out


def test_zookeeper_range_agrees_with_kafka_python(spark):
    rng = random.Random(20240607)
    regs, parts, want = [], [], {}
    for case in range(CASES):
        group = f"z{case}"
        topics = [f"{group}_t{j}" for j in range(rng.randint(1, 3))]
        counts = {t: rng.randint(1, 25) for t in topics}
        parts += [(t, p, None) for t, n in counts.items() for p in range(n)]
        threads = {}
        for c in range(rng.randint(1, 4)):
            consumer = f"{group}_host{rng.randint(0, 99)}-{1700000000000 + c}-{rng.getrandbits(32):08x}"
            for t in rng.sample(topics, rng.randint(1, len(topics))):
                streams = rng.randint(1, 12)
                regs.append((group, consumer, t, streams))
                for n in range(streams):
                    threads.setdefault(f"{consumer}-{n}", []).append(t)
        members = [_Member(tid, None, _Sub(ts)) for tid, ts in threads.items()]
        want.update(_oracle(RangePartitionAssignor, members, counts, group))
    got = zk_expected(
        spark.createDataFrame(regs, "group_id string, consumer_id string, topic string, streams int"),
        spark.createDataFrame(parts, "topic string, partition int, broker_id int"),
        {},
    ).collect()
    assert {(r.group_id, r.topic, r.partition): r.expected_owner for r in got} == want


def _kafka_cases(rng, protocol):
    meta, members, log_ends, want = [], [], [], {}
    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[protocol]
    for case in range(CASES):
        group = f"{protocol}{case}"
        topics = [f"{group}_t{j}" for j in range(rng.randint(1, 4))]
        rng.shuffle(topics)
        counts = {t: rng.randint(1, 20) for t in topics}
        log_ends += [(t, p, 0, 1, TS, "r1") for t, n in counts.items() for p in range(n)]
        group_members = []
        for m in range(rng.randint(1, 6)):
            member = f"consumer-{group}-{m}-{rng.getrandbits(48):012x}"
            instance = f"inst-{rng.getrandbits(16):04x}-{m}" if rng.random() < 0.4 else None
            # kafka-python 3.0's round robin breaks (KeyError) when it has to skip a member that
            # does not read a topic, so its cases share one subscription; mixed subscriptions
            # are covered by the hand-computed tests
            subscribed = topics if protocol == "roundrobin" else rng.sample(topics, rng.randint(1, len(topics)))
            group_members.append(_Member(member, instance, _Sub(list(subscribed))))
        # kafka-python groups static/dynamic members with itertools.groupby: give it statics first
        group_members.sort(key=lambda mb: mb.group_instance_id is None)
        log_offset = case * 10
        meta.append((group, 1, "consumer", protocol, None, TS, False, 3, 0, log_offset, "f.log", "r1"))
        for mb in group_members:
            members.append(
                (group, 1, 0, log_offset, mb.member_id, mb.group_instance_id, "c", "/h", 1, 1, mb.metadata.topics, "r1")
            )
        want.update(_oracle(assignor, group_members, counts, group))
    return meta, members, log_ends, want


def test_kafka_range_and_roundrobin_agree_with_kafka_python(spark):
    rng = random.Random(8675309)
    meta, members, log_ends, want = [], [], [], {}
    for protocol in ("range", "roundrobin"):
        m, mb, le, w = _kafka_cases(rng, protocol)
        meta, members, log_ends = meta + m, members + mb, log_ends + le
        want.update(w)
    gm = spark.createDataFrame(meta, table_schema("raw/group_metadata", True))
    mem = spark.createDataFrame(members, table_schema("raw/group_members", True))
    le = spark.createDataFrame(log_ends, table_schema("raw/log_end_offsets", True))
    tp = spark.createDataFrame([], table_schema("core/topic_partitions", True))
    latest = ak.latest_groups(gm)
    got = ak.expected_assignment(ak.latest_members(latest, mem), ak.topic_partitions(tp, le)).collect()
    assert {(r.group_id, r.topic, r.partition): r.expected_owner for r in got} == want
    assert {r.assignor for r in got} == {"range", "roundrobin"}
