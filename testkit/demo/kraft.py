"""The demo's KRaft cluster (Kafka 4.x, no ZooKeeper), written under ``data/kraft/``:

- ``metadata/__cluster_metadata-0/``: the bootstrap segment, a snapshot of the state after it
  (``<end offset>-<epoch>.checkpoint``, header/footer control records) and the segment after
  it: broker 3 fenced and unfenced (leaders and ISRs move), one partition left with an ISR
  below ``min.insync.replicas``, config changes, a metadata transaction that aborts, topic
  ``audit-log`` deleted and re-created (a new topic id); ``metadata/meta.properties``.
- ``kafka-logs/``: data-topic segments and ``__consumer_offsets-<N>/`` with KIP-848 records of
  two groups: ``invoicing`` (healthy: target == current) and ``order-router`` (the server's
  target differs from the range recompute, a STABLE member holds a partition off its target,
  so the partition is held twice), and their offset commits (v4 with topic ids for
  ``invoicing``), some of them to ``audit-log`` while it was deleted.

Records are encoded with :mod:`testkit.kraft` / :mod:`testkit.kip848` (kio primitives) in
kafka-python batches; :func:`build_kraft` returns the manifest's ``kraft`` part, its expected
findings computed here from the cluster below (the rules of CONTRACT.md, FORMATS.md and
:mod:`testkit.oracle`), never from kaudit. Deterministic: fixed times, no randomness."""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from testkit import kip848 as G
from testkit import kraft as B
from testkit.demo.kafka import Commit
from testkit.demo.spec import ms
from testkit.oracle import counts, expected_marts, kafka_group_rows, range_assign
from testkit.segments import (
    batch,
    group_partition,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

ROOT = "kraft"
CLUSTER_ID = "kAuDiTkRaFt-dEmO_4x_0q"  # 22 chars of [a-zA-Z0-9_-]
OFFSETS_TOPIC_PARTITIONS = 50
SNAPSHOT_EPOCH = 1
MIN_ISR = "min.insync.replicas"
BROKER, TOPIC = 4, 2  # ConfigResource types

T0 = ms("2026-11-21T08:00:00")
MIN = 60_000
BROKERS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
TOPICS = {"orders": (B.topic_uuid(0xD1), 6), "payments": (B.topic_uuid(0xD2), 4), "audit-log": (B.topic_uuid(0xD3), 3)}
AUDIT_LOG_NEW = B.topic_uuid(0xD4)  # audit-log re-created
FENCED_AT, UNFENCED_AT = T0 + 60 * MIN, T0 + 70 * MIN  # broker 3 away (a rolling restart)
LAGGING = ("orders", 4)  # its ISR shrinks to the leader alone and stays so
DELETED_AT, RECREATED_AT = T0 + 120 * MIN, T0 + 140 * MIN  # audit-log
ROUND_MS = 5 * MIN
ROUNDS = 31  # commits every 5 minutes from 08:30 to 11:00
COMMITS_FROM = T0 + 30 * MIN
GROUP_RECORDS_AT = T0 + 150 * MIN
LOG_END = {
    **{("orders", p): 500 + 40 * p for p in range(6)},
    **{("payments", p): 400 + 30 * p for p in range(4)},
    **{("audit-log", p): 60 + 5 * p for p in range(3)},  # the re-created topic
}


def replicas(topic: str, p: int) -> list[int]:
    """Replication factor 3, the first replica (the leader) spread round robin."""
    first = (p + len(topic)) % 3
    return [(first + k) % 3 + 1 for k in range(3)]


# --- the KIP-848 groups ------------------------------------------------------------------------


@dataclass
class Member848:
    member_id: str
    topics: list[str]
    target: dict[str, list[int]]
    held: dict[str, list[int]]
    instance_id: str | None = None
    epoch: int = 0
    state: str = "STABLE"


@dataclass
class Group848:
    name: str
    epoch: int
    members: list[Member848]
    assignor: str = "range"
    commit_version: int = 3  # 4: with the topic id tag
    lag: int = 5
    commits: dict[str, list[int]] = field(default_factory=dict)  # topic -> partitions committed


def _member(group: str, n: int, uuid_tail: str, **kw) -> Member848:
    return Member848(f"{group}-{n}-{uuid_tail}", **kw)


GROUPS = [
    # healthy: range over two topics, target == current, every member STABLE at the group epoch
    Group848(
        "invoicing",
        12,
        [
            _member(
                "invoicing",
                1,
                "7f0c9a1e",
                topics=["payments", "audit-log"],
                instance_id="inv-1",
                epoch=12,
                target={"payments": [0, 1], "audit-log": [0, 1]},
                held={"payments": [0, 1], "audit-log": [0, 1]},
            ),
            _member(
                "invoicing",
                2,
                "2b5d8e44",
                topics=["payments", "audit-log"],
                instance_id="inv-2",
                epoch=12,
                target={"payments": [2, 3], "audit-log": [2]},
                held={"payments": [2, 3], "audit-log": [2]},
            ),
        ],
        commit_version=4,
        lag=3,
        commits={"payments": [0, 1, 2, 3], "audit-log": [0, 1, 2]},
    ),
    # faulty: range puts router-a (instance id) first, then the dynamic members by member id:
    # orders 0-1, 2-3, 4-5; the server's target gives orders-2 to router-a; member -2 (STABLE)
    # still holds orders-4, which member -3 holds too
    Group848(
        "order-router",
        9,
        [
            _member(
                "order-router",
                1,
                "c41d07aa",
                topics=["orders"],
                instance_id="router-a",
                epoch=9,
                target={"orders": [0, 1, 2]},
                held={"orders": [0, 1, 2]},
            ),
            _member(
                "order-router",
                2,
                "5e9b3f10",
                topics=["orders"],
                epoch=9,
                target={"orders": [3]},
                held={"orders": [3, 4]},
            ),
            _member(
                "order-router",
                3,
                "9a0e6c25",
                topics=["orders"],
                epoch=9,
                target={"orders": [4, 5]},
                held={"orders": [4, 5]},
            ),
        ],
        lag=17,
        commits={"orders": [0, 1, 2, 3, 4, 5]},
    ),
]


# --- the metadata log ----------------------------------------------------------------------------


class Model:
    """The registry as the records written so far change it (the snapshot and the oracle)."""

    def __init__(self):
        self.brokers: dict[int, bool] = {}  # id -> fenced
        self.topics: dict[str, uuid.UUID] = {}
        self.partitions: dict[tuple[str, int], dict] = {}  # (topic, p) -> replicas, isr, leader, epochs
        self.configs: dict[tuple[int, str, str], str] = {}


def _change(model: Model, topic: str, p: int, *, isr: list[int], leader: int | None = None) -> bytes:
    part = model.partitions[(topic, p)]
    part["isr"] = isr
    part["partition_epoch"] += 1
    if leader is not None:
        part["leader"] = leader
        part["leader_epoch"] += 1
    return B.partition_change(model.topics[topic], p, isr=isr, leader=leader)


def _create_topic(model: Model, name: str, topic_id: uuid.UUID, n: int) -> list[bytes]:
    model.topics[name] = topic_id
    out = [B.topic(name, topic_id)]
    for p in range(n):
        reps = replicas(name, p)
        model.partitions[(name, p)] = dict(
            replicas=reps, isr=list(reps), leader=reps[0], leader_epoch=0, partition_epoch=0
        )
        out.append(B.partition(topic_id, p, reps))
    return out


def _config(model: Model, rtype: int, name: str, key: str, value: str) -> bytes:
    model.configs[(rtype, name, key)] = value
    return B.config(rtype, name, key, value)


def _snapshot(model: Model) -> list[bytes]:
    """The image of ``model`` as a snapshot's records (MetadataImage's order: features, brokers,
    topics with their partitions, configs)."""
    out = [B.feature_level("metadata.version", 25)]
    for b, fenced in sorted(model.brokers.items()):
        out.append(B.register_broker(b, host=f"kafka-{b}.kraft.demo.internal", rack=BROKERS[b], fenced=fenced))
    out.append(B.register_controller(3000))
    for name, tid in sorted(model.topics.items()):
        out.append(B.topic(name, tid))
        for (t, p), part in sorted(model.partitions.items()):
            if t == name:
                out.append(
                    B.partition(
                        tid,
                        p,
                        part["replicas"],
                        isr=part["isr"],
                        leader=part["leader"],
                        leader_epoch=part["leader_epoch"],
                        partition_epoch=part["partition_epoch"],
                    )
                )
    for (rtype, name, key), value in sorted(model.configs.items()):
        out.append(B.config(rtype, name, key, value))
    return out


def write_metadata(root: Path) -> tuple[Model, dict]:
    """``root/metadata/``: the log (two segments) and a snapshot; returns the final model and the
    facts of the manifest."""
    model, log = Model(), B.Log(start_offset=0, start_ms=T0)
    log.control(B.leader_change(3000, [3000]))
    log.append(B.feature_level("metadata.version", 25), B.register_controller(3000))
    for b, rack in BROKERS.items():
        model.brokers[b] = True
        log.append(B.register_broker(b, host=f"kafka-{b}.kraft.demo.internal", rack=rack, fenced=True))
    for b in BROKERS:
        model.brokers[b] = False
        log.append(B.unfence_broker(b))
    for name, (tid, n) in TOPICS.items():
        log.append(*_create_topic(model, name, tid, n))
    log.append(_config(model, BROKER, "", MIN_ISR, "2"), _config(model, TOPIC, "payments", "retention.ms", "604800000"))
    snapshot_end = log.next_offset
    snapshot_ts = log.now
    first_segment = list(log.batches)
    snapshot = _snapshot(model)

    log.batches = []
    log.now = FENCED_AT
    model.brokers[3] = True
    changes = [B.broker_registration_change(3, fenced=1)]
    for (topic, p), part in sorted(model.partitions.items()):
        if 3 in part["isr"]:
            isr = [r for r in part["isr"] if r != 3]
            changes.append(_change(model, topic, p, isr=isr, leader=isr[0] if part["leader"] == 3 else None))
    log.append(*changes)
    log.now = FENCED_AT + 2 * MIN
    lag_part = model.partitions[LAGGING]
    log.append(_change(model, *LAGGING, isr=[lag_part["leader"]]))
    log.now = UNFENCED_AT
    model.brokers[3] = False
    log.append(B.broker_registration_change(3, fenced=-1))
    log.now = UNFENCED_AT + MIN
    back = []
    for (topic, p), part in sorted(model.partitions.items()):
        if (topic, p) != LAGGING and 3 not in part["isr"]:
            back.append(_change(model, topic, p, isr=[r for r in part["replicas"] if r in part["isr"] or r == 3]))
    log.append(*back)
    log.now = T0 + 90 * MIN
    log.append(
        _config(model, TOPIC, "orders", "retention.ms", "86400000"), _config(model, TOPIC, "orders", MIN_ISR, "2")
    )
    log.now = T0 + 100 * MIN
    log.append(B.begin_transaction("create orders-v2"))
    aborted = [B.topic("orders-v2", B.topic_uuid(0xD9)), B.partition(B.topic_uuid(0xD9), 0, [1, 2, 3])]
    log.append(*aborted)  # never applied: the model does not see it
    log.append(B.abort_transaction("controller failover"))
    log.append(B.no_op())
    log.now = DELETED_AT - 1000
    del model.topics["audit-log"]
    for key in [k for k in model.partitions if k[0] == "audit-log"]:
        del model.partitions[key]
    log.append(B.remove_topic(TOPICS["audit-log"][0]))
    assert log.now == DELETED_AT
    log.now = RECREATED_AT - 1000
    log.append(*_create_topic(model, "audit-log", AUDIT_LOG_NEW, TOPICS["audit-log"][1]))
    assert log.now == RECREATED_AT
    log.append(B.no_op())

    meta = root / "metadata"
    d = meta / "__cluster_metadata-0"
    d.mkdir(parents=True)
    (meta / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER_ID}\nnode.id=3000\n")
    first = d / B.segment_name(0)
    first.write_bytes(b"".join(first_segment))
    (d / B.segment_name(snapshot_end)).write_bytes(b"".join(log.batches))
    snap = d / B.snapshot_name(snapshot_end, SNAPSHOT_EPOCH)
    snap.write_bytes(B.snapshot_bytes(snapshot, last_contained_ts=snapshot_ts))
    files = {f"{d.name}/{f.name}": f.stat().st_size for f in sorted(d.iterdir())}
    return model, dict(
        files=files,
        snapshot=snap.name,
        snapshot_records=len(snapshot),
        end_offset=log.next_offset - 1,
        aborted_records=len(aborted),
    )


def under_min_isr(model: Model) -> list[dict]:
    """Partitions whose ISR is below min.insync.replicas: the topic's config, else the leader
    broker's, else the cluster default, else 1."""
    out = []
    for (topic, p), part in sorted(model.partitions.items()):
        need = int(
            model.configs.get((TOPIC, topic, MIN_ISR))
            or model.configs.get((BROKER, str(part["leader"]), MIN_ISR))
            or model.configs.get((BROKER, "", MIN_ISR))
            or 1
        )
        if len(part["isr"]) < need:
            out.append(dict(topic=topic, partition=p, leader=part["leader"], isr=part["isr"], min_isr=need))
    return out


# --- __consumer_offsets and data topics ------------------------------------------------------------


def _commit_offset(g: Group848, topic: str, p: int, r: int, at: int) -> int:
    """What ``g`` commits in round ``r`` (at ``at``): ``audit-log`` consumers keep committing
    their last position of the old topic until it is re-created, then start over on the new one."""
    if topic == "audit-log":
        if at < DELETED_AT:
            return 200 + 10 * r + p
        if at < RECREATED_AT:
            return 200 + 10 * ((DELETED_AT - COMMITS_FROM) // ROUND_MS - 1) + p
        k = (at - RECREATED_AT) // ROUND_MS
        return min(5 * (k + 1) + p, LOG_END[(topic, p)] - g.lag)
    return (LOG_END[(topic, p)] - g.lag) * (r + 1) // ROUNDS


def _group_records(g: Group848) -> list[tuple[bytes, bytes]]:
    def ids(parts: dict[str, list[int]]) -> dict[uuid.UUID, list[int]]:
        return {(AUDIT_LOG_NEW if t == "audit-log" else TOPICS[t][0]): ps for t, ps in parts.items()}

    recs = [G.group_metadata(g.name, g.epoch)]
    for i, m in enumerate(g.members):
        recs.append(
            G.member_metadata(
                g.name,
                m.member_id,
                instance_id=m.instance_id,
                client_id=m.member_id[:-9],
                client_host=f"/10.30.{GROUPS.index(g)}.{i + 11}",
                topics=m.topics,
                assignor=g.assignor,
            )
        )
    recs.append(G.target_metadata(g.name, g.epoch))
    recs += [G.target_member(g.name, m.member_id, ids(m.target)) for m in g.members]
    recs += [
        G.current_member(
            g.name, m.member_id, epoch=m.epoch, previous_epoch=m.epoch - 1, state=m.state, assigned=ids(m.held)
        )
        for m in g.members
    ]
    return recs


def write_offsets(root: Path) -> dict:
    """``__consumer_offsets`` segments and data-topic segments under ``root/kafka-logs``."""
    logs = root / "kafka-logs"
    events: dict[int, list] = defaultdict(list)  # offsets partition -> (ts, seq, kind, payload)
    commits: list[Commit] = []
    for gi, g in enumerate(GROUPS):
        part = group_partition(g.name, OFFSETS_TOPIC_PARTITIONS)
        events[part].append((GROUP_RECORDS_AT + gi, 0, "group", g))
        for r in range(ROUNDS):
            ts = COMMITS_FROM + r * ROUND_MS + 1000 * (gi + 1)
            cs = [Commit(g.name, t, p, _commit_offset(g, t, p, r, ts), ts) for t, ps in g.commits.items() for p in ps]
            events[part].append((ts, 1, "commits", cs))
        if "audit-log" in g.commits:  # the coordinator deletes the offsets of the deleted topic
            ts = DELETED_AT + 500
            events[part].append(
                (ts, 1, "commits", [Commit(g.name, "audit-log", p, None, ts) for p in g.commits["audit-log"]])
            )
    files, group_records = {}, 0
    for part, evs in sorted(events.items()):
        evs.sort(key=lambda e: (e[0], e[1]))
        offset, batches = 0, []
        for ts, _, kind, payload in evs:
            if kind == "group":
                recs = _group_records(payload)
                group_records += len(recs)
            else:
                recs = []
                g = next(x for x in GROUPS if x.name == payload[0].group)
                for c in payload:
                    c.log_offset = offset + len(recs)
                    value = None
                    if c.offset is not None:
                        tid = AUDIT_LOG_NEW if c.topic == "audit-log" and ts >= RECREATED_AT else TOPICS[c.topic][0]
                        value = offset_commit_value(
                            c.offset,
                            commit_ts=c.commit_ts,
                            leader_epoch=4,
                            version=g.commit_version,
                            tags={0: tid.bytes} if g.commit_version == 4 else None,
                        )
                    recs.append((offset_commit_key(c.group, c.topic, c.partition), value))
                commits += payload
            batches.append(batch(recs, base_offset=offset, timestamp_ms=ts))
            offset += len(recs)
        name = f"__consumer_offsets-{part}/{segment_name(0)}"
        write_segment(logs / name, batches)
        files[name] = {"batches": len(batches), "records": offset}
    log_ends = {}
    for (topic, p), end in sorted(LOG_END.items()):
        recs = [(None, b"%s-%d-%d" % (topic.encode(), p, i)) for i in range(end)]
        write_segment(
            logs / f"{topic}-{p}" / segment_name(0),
            [batch(recs, base_offset=0, codec="zstd", timestamp_ms=GROUP_RECORDS_AT + 10 * MIN)],
        )
        log_ends[f"{topic}-{p}"] = dict(topic=topic, partition=p, log_end_offset=end)
    return dict(files=files, commits=commits, log_ends=log_ends, group_records=group_records)


# --- what kaudit must find -----------------------------------------------------------------------


def _audit(model: Model) -> list[dict]:
    """``assignment_audit`` rows of the groups: expected = the server's target, observed = the
    members' current assignments (no partitions pending revocation in the demo)."""
    rows = []
    for g in GROUPS:
        expected = {(t, p): m.member_id for m in g.members for t, ps in m.target.items() for p in ps}
        observed = defaultdict(list)
        for m in g.members:
            for t, ps in m.held.items():
                for p in ps:
                    observed[(t, p)].append(m.member_id)
        rows += kafka_group_rows(g.name, expected, observed, model.partitions, {t for m in g.members for t in m.topics},
                                 {m.member_id for m in g.members})
    return rows


def _group_findings(model: Model) -> list[dict]:
    """The named findings of the groups (README "KIP-848 groups"): the range target recomputed
    (instance ids first, by instance id, then member ids; contiguous blocks per topic), partitions
    held by two members (no hand-off in the demo), STABLE members off target; epochs in order."""
    out = []

    def row(g, member, topic, p, finding, detail):
        out.append(
            dict(
                source="kafka",
                group_id=g.name,
                member_id=member,
                topic=topic,
                partition=p,
                finding=finding,
                detail=detail,
            )
        )

    for g in GROUPS:
        assert all(m.epoch <= g.epoch for m in g.members)  # no epoch_order_violated planted
        target = {(t, p): m.member_id for m in g.members for t, ps in m.target.items() for p in ps}
        if g.assignor == "range":
            order = sorted(g.members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
            for t in sorted({t for m in g.members for t in m.topics}):
                n = sum(1 for k in model.partitions if k[0] == t)
                want = range_assign(list(range(n)), [m.member_id for m in order if t in m.topics])
                for p in range(n):
                    if want.get(p) != target.get((t, p)):
                        row(
                            g,
                            target.get((t, p)),
                            t,
                            p,
                            "range_target_differs",
                            f"range assigns {want.get(p) or 'nobody'}, target has {target.get((t, p)) or 'nobody'}",
                        )
        holders = defaultdict(list)
        for m in g.members:
            for t, ps in m.held.items():
                for p in ps:
                    holders[(t, p)].append(m.member_id)
        for (t, p), ms_ in sorted(holders.items()):
            if len(ms_) > 1:
                row(g, None, t, p, "partition_held_twice", "held by " + ", ".join(sorted(ms_)))
        for m in g.members:
            if m.state != "STABLE":
                continue
            held = {(t, p) for t, ps in m.held.items() for p in ps}
            mine = {(t, p) for t, ps in m.target.items() for p in ps}
            for t, p in sorted(held - mine):
                row(g, m.member_id, t, p, "stable_member_off_target", "held, not targeted")
            for t, p in sorted(mine - held):
                row(g, m.member_id, t, p, "stable_member_off_target", "targeted, not held")
    return sorted(out, key=lambda r: (r["group_id"], r["finding"], r["topic"], r["partition"], r["member_id"] or ""))


def _deleted_topic_commits(commits: list[Commit]) -> list[dict]:
    """Per (group, partition): commits to ``audit-log`` after its deletion and before its
    re-creation (tombstones are not commits), with the last offset."""
    out: dict[tuple, dict] = {}
    for c in sorted(commits, key=lambda c: (c.commit_ts, c.log_offset)):
        if c.topic == "audit-log" and c.offset is not None and DELETED_AT < c.commit_ts < RECREATED_AT:
            r = out.setdefault(
                (c.group, c.partition), dict(group_id=c.group, topic=c.topic, partition=c.partition, commits=0)
            )
            r["commits"] += 1
            r["last_offset"] = c.offset
    return [out[k] for k in sorted(out)]


def build_kraft(data: Path) -> dict:
    """Write ``data/kraft/`` and return the manifest's ``kraft`` part."""
    root = data / ROOT
    model, meta = write_metadata(root)
    offsets = write_offsets(root)
    commits = offsets["commits"]
    audit = _audit(model)
    marts = expected_marts(commits, {}, offsets["log_ends"])
    findings = _group_findings(model)
    return {
        "about": "A KRaft (Kafka 4.x) cluster: metadata log + snapshot, KIP-848 groups; a run of its own in the demo.",
        "metadata_dir": f"{ROOT}/metadata",
        "log_dir": f"{ROOT}/kafka-logs",
        "cluster_id": CLUSTER_ID,
        "metadata": meta,
        "offsets_files": offsets["files"],
        "topics": {
            t: {"topic_id": B.uuid_text(AUDIT_LOG_NEW if t == "audit-log" else tid), "partitions": n}
            for t, (tid, n) in TOPICS.items()
        },
        "deleted_topic_ids": {"audit-log": B.uuid_text(TOPICS["audit-log"][0])},
        "expected": {
            "assignment": {"kafka": counts(audit, "kafka")},
            "offset_regressions": len(marts["offset_regressions"]),
            "quarantined": 0,
            "offset_commit_records": len(commits),
            "kip848_group_records": offsets["group_records"],
            "brokers": len(model.brokers),
            "partitions": len(model.partitions),
            "isr_below_min_insync": under_min_isr(model),
            "deleted_topic_commits": _deleted_topic_commits(commits),
            "group_findings": findings,
        },
        "assignment_audit": audit,
        "offset_regressions": marts["offset_regressions"],
    }
