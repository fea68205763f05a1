"""The demo's Kafka side: data-topic and ``__consumer_offsets-<N>`` segments, encoded with
kafka-python through :mod:`testkit.segments` (independent of kaudit's decoders)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from testkit.demo.spec import (
    ABORTED,
    CODECS,
    CORRUPT,
    KAFKA_GROUPS,
    LOG_START,
    LOG_START_CHECKPOINT,
    OFFSETS_TOPIC_PARTITIONS,
    OLD_ETL_ROUNDS,
    OLD_ETL_TOMBSTONE_ROUND,
    RECORDS,
    REGRESSION,
    ROUND_MS,
    ROUNDS,
    SEGMENT_ROLLS,
    T0,
    TXN_PRODUCER,
    Generation,
    commit_at,
    commit_ts,
    data_batches,
    generation_ts,
)
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


def build_data_segments(root: Path) -> dict:
    """Data-topic segments under ``root/kafka-logs`` (the batches of :func:`spec.data_batches`,
    tiny records) and the log dir's ``log-start-offset-checkpoint``; returns {topic-p: log
    start/end, max ts}."""
    out = {}
    for (topic, p), n in sorted(RECORDS.items()):
        start = LOG_START.get((topic, p), 0)
        rolls = [start + r for r in SEGMENT_ROLLS.get((topic, p), [])]
        segments: dict[int, list[bytes]] = {start: []}
        layout = data_batches(topic, p)
        for j, (off, k, ts) in enumerate(layout):
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
        for base, batches in segments.items():
            write_segment(root / "kafka-logs" / f"{topic}-{p}" / segment_name(base), batches)
        end, max_ts = layout[-1][0] + layout[-1][1], layout[-1][2]
        out[f"{topic}-{p}"] = dict(
            topic=topic,
            partition=p,
            log_start_offset=start,
            log_end_offset=end,
            max_timestamp=max_ts,
            segments=[segment_name(b) for b in segments],
            batches=len(layout),
            records=n,
        )
        if (topic, p) in LOG_START_CHECKPOINT:
            out[f"{topic}-{p}"]["checkpoint_log_start_offset"] = LOG_START_CHECKPOINT[(topic, p)]
    # as Kafka's LogManager writes it: version, count, then only the partitions whose log start
    # is past their first segment's base offset
    entries = [f"{t} {p} {o}" for (t, p), o in sorted(LOG_START_CHECKPOINT.items())]
    checkpoint = root / "kafka-logs" / "log-start-offset-checkpoint"
    checkpoint.write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")
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


def build_offsets_segments(root: Path) -> dict:
    """``__consumer_offsets`` segments under ``root/kafka-logs``; returns the facts of the
    manifest's Kafka part."""
    # events per offsets partition in time order: (ts, seq, kind, payload)
    events: dict[int, list] = defaultdict(list)
    seq = iter(range(1 << 30))
    groups = {g.name: g for g in KAFKA_GROUPS}

    def add(group: str, ts: int, kind: str, payload) -> None:
        events[group_partition(group, OFFSETS_TOPIC_PARTITIONS)].append((ts, next(seq), kind, group, payload))

    for g in KAFKA_GROUPS:
        for gen in g.generations:
            add(g.name, generation_ts(gen), "group", gen)
        rounds = range(OLD_ETL_ROUNDS) if g.name == "old-etl" else range(ROUNDS)
        for r in rounds:
            ts = commit_ts(g, r)
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
            write_segment(root / "kafka-logs" / name, bs)
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
