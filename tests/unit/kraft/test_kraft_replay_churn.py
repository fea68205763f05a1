"""Replay of a busy log's partition churn (the runs :meth:`Registry.apply_partitions` applies at
once) against the state worked out here, change by change, from what the test wrote: leader and
ISR changes with unchanged fields left out, re-sent PartitionRecords, changes to partitions that
do not exist, other records between them, topics removed and re-created, an aborted and a
committed metadata transaction, a snapshot the replay starts from."""

from __future__ import annotations

import random

import pytest

from pipelines.context import RunContext
from pipelines.kraft.extract import extract_kraft
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit import kraft as B

BROKERS = [1, 2, 3, 4, 5]


class Model:
    """The test's own bookkeeping: topic id -> partition -> state."""

    def __init__(self):
        self.parts: dict = {}
        self.configs: dict = {}  # (resource type, resource, name) -> value

    def create(self, tid, pid, replicas):
        self.parts.setdefault(tid, {})[pid] = {"replicas": replicas, "isr": list(replicas), "leader": replicas[0],
                                               "leader_epoch": 0, "partition_epoch": 0}

    def change(self, tid, pid, isr, leader, replicas):
        p = self.parts.get(tid, {}).get(pid)
        if p is None:
            return
        if isr is not None:
            p["isr"] = isr
        if replicas is not None:
            p["replicas"] = replicas
        if leader is not None:
            p["leader"] = leader
            p["leader_epoch"] += 1
        p["partition_epoch"] += 1


def _churn(rng: random.Random, model: Model, topics: list, n: int, *, apply=True) -> list[bytes]:
    out = []
    for _ in range(n):
        tid = rng.choice(topics)
        pid = rng.randrange(4)
        r = rng.random()
        if r < 0.7:
            isr = rng.sample(BROKERS, rng.randint(1, 3)) if rng.random() < 0.8 else None
            leader = rng.choice(BROKERS + [-1]) if rng.random() < 0.4 else None
            replicas = rng.sample(BROKERS, 3) if rng.random() < 0.1 else None
            out.append(B.partition_change(tid, pid, isr=isr, leader=leader, replicas=replicas))
            if apply:
                model.change(tid, pid, isr, leader, replicas)
        elif r < 0.8:
            replicas = rng.sample(BROKERS, 3)
            out.append(B.partition(tid, pid, replicas))
            if apply:
                model.create(tid, pid, replicas)
        elif r < 0.9:
            key = (rng.choice((2, 4)), rng.choice(("t0", "t1", "")), rng.choice(("min.insync.replicas", "segment.ms")))
            value = str(rng.randint(1, 3)) if rng.random() < 0.8 else None
            out.append(B.config(*key, value))
            if apply and value is None:
                model.configs.pop(key, None)
            elif apply:
                model.configs[key] = value
        else:
            out.append(B.broker_registration_change(rng.choice(BROKERS), fenced=rng.choice((-1, 1))))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_partition_churn_replays_change_by_change(tmp_path, seed):
    rng, model = random.Random(seed), Model()
    d = tmp_path / "__cluster_metadata-0"
    topics = [B.topic_uuid(i) for i in range(1, 6)]
    log = B.Log()
    log.append(*[B.register_broker(b, fenced=False) for b in BROKERS])
    for i, tid in enumerate(topics):
        replicas = [rng.sample(BROKERS, 3) for _ in range(3)]
        log.append(B.topic(f"t{i}", tid), *[B.partition(tid, p, r) for p, r in enumerate(replicas)])
        for p, r in enumerate(replicas):
            model.create(tid, p, r)
    for _ in range(30):
        log.append(*_churn(rng, model, topics, rng.randint(1, 40)))
    # an aborted transaction changes nothing; a committed one applies
    log.append(B.begin_transaction("a"), *_churn(rng, model, topics, 10, apply=False))
    log.append(B.abort_transaction("x"))
    log.append(B.begin_transaction("b"), *_churn(rng, model, topics, 10))
    log.append(B.end_transaction())
    gone = topics.pop(0)
    log.append(*_churn(rng, model, [gone], 5), B.remove_topic(gone), B.partition_change(gone, 0, isr=[1]))
    del model.parts[gone]
    model.configs = {k: v for k, v in model.configs.items() if k[:2] != (2, "t0")}  # the topic's configs go with it
    again = B.topic_uuid(99)
    log.append(B.topic("t0", again), B.partition(again, 0, [1, 2, 3]))
    model.create(again, 0, [1, 2, 3])
    topics.append(again)
    for _ in range(30):
        log.append(*_churn(rng, model, topics, rng.randint(1, 40)))
    log.write(d / B.segment_name(0))

    wh = Warehouse(tmp_path / "wh")
    extract_kraft(RunContext(wh, "r1", quiet=True), [d])
    got = {(p["topic_id"], p["partition"]): {k: p[k] for k in ("replicas", "isr", "leader", "leader_epoch",
                                                                  "partition_epoch")}
           for p in read_arrow(wh, "raw/kraft_partitions", "r1").to_pylist()}
    want = {(B.uuid_text(t), pid): p for t, parts in model.parts.items() for pid, p in parts.items()}
    assert got == want
    types = {2: "topic", 4: "broker"}
    assert {(c["resource_type"], c["resource_name"], c["name"]): c["value"]
            for c in read_arrow(wh, "raw/kraft_configs", "r1").to_pylist()} == {
        (types[t], name, key): value for (t, name, key), value in model.configs.items()}
