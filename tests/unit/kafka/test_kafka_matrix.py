"""The generated matrix - magic x codec x key version x value version x transaction state x
tombstone, group metadata versions x ConsumerProtocol versions - encoded with kafka-python's
builders (testkit/segments.py), decodes exactly."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from testkit.segments import (
    assignment,
    batch,
    control_batch,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    subscription,
    write_segment,
)

CODECS = {0: ["none", "gzip", "snappy", "snappy-plain", "lz4"], 1: ["none", "gzip", "snappy", "snappy-plain", "lz4"]}
CODECS[2] = CODECS[0] + ["zstd"]
MATRIX = [(m, c) for m in (0, 1, 2) for c in CODECS[m]]
TXN = {"committed": (1000, True), "aborted": (2000, False), "pending": (3000, None)}
T0 = 1_700_000_000_000


def _ts(ms):
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def _spec(magic):
    """Commit records to write: dicts with what goes in and what must come out."""
    specs = []
    states = [None] + (list(TXN) if magic == 2 else [])
    for i, (kv, vv, tomb, state) in enumerate(itertools.product((0, 1), range(5), (False, True), states)):
        specs.append(
            dict(
                group=f"group-{i % 3}-é",
                topic=f"topic.{kv}-{vv}",
                partition=i,
                offset=10_000 + i,
                epoch=i % 7,
                metadata=f"m{i}" if i % 2 else "",
                commit_ts=T0 + i,
                expire_ts=T0 + 86_400_000 + i,
                key_version=kv,
                value_version=vv,
                tombstone=tomb,
                state=state,
            )
        )
    return specs


def _value(s):
    if s["tombstone"]:
        return None
    return offset_commit_value(
        s["offset"],
        metadata=s["metadata"],
        commit_ts=s["commit_ts"],
        expire_ts=s["expire_ts"],
        leader_epoch=s["epoch"],
        version=s["value_version"],
        tags={0: b"\x01" * 16} if s["value_version"] == 4 and s["partition"] % 2 else None,
    )


def _write_partition(root, magic, codec, specs):
    """Two segments: the data, then (for magic 2) the transaction markers in the second."""
    part = root / "__consumer_offsets-11"
    first, second = [], []
    offset = 0
    log_offsets = {}
    # batches of 1..3 consecutive records sharing their producer
    runs = [list(g) for _, g in itertools.groupby(specs, key=lambda s: s["state"])]
    for run in runs:
        for j in range(0, len(run), 3):
            chunk = run[j : j + 1 + (j // 3) % 3]
            if not chunk:
                continue
            state = chunk[0]["state"]
            recs = [(offset_commit_key(s["group"], s["topic"], s["partition"], version=s["key_version"]), _value(s))
                    for s in chunk]
            kw = {}
            if state is not None:
                kw = dict(producer_id=TXN[state][0], producer_epoch=0, base_sequence=0, transactional=True)
            first.append(batch(recs, base_offset=offset, magic=magic, codec=codec, timestamp_ms=T0, **kw))
            for s in chunk:
                log_offsets[id(s)] = offset
                offset += 1
        # the remaining records of a partially chunked run
        done = {id(s) for s in run if id(s) in log_offsets}
        rest = [s for s in run if id(s) not in done]
        for s in rest:
            kw = {}
            if s["state"] is not None:
                kw = dict(producer_id=TXN[s["state"]][0], producer_epoch=0, base_sequence=0, transactional=True)
            first.append(
                batch(
                    [(offset_commit_key(s["group"], s["topic"], s["partition"], version=s["key_version"]), _value(s))],
                    base_offset=offset,
                    magic=magic,
                    codec=codec,
                    timestamp_ms=T0,
                    **kw,
                )
            )
            log_offsets[id(s)] = offset
            offset += 1
    write_segment(part / segment_name(0), first)
    if magic == 2:
        second_base = offset
        for pid, commit in TXN.values():
            if commit is not None:
                second.append(
                    control_batch(base_offset=offset, producer_id=pid, producer_epoch=0, commit=commit, timestamp_ms=T0)
                )
                offset += 1
        # a later, unrelated transaction of the committed producer must not change anything
        second.append(
            control_batch(base_offset=offset, producer_id=1000, producer_epoch=0, commit=False, timestamp_ms=T0)
        )
        write_segment(part / segment_name(second_base), second)
    return log_offsets


@pytest.mark.parametrize("magic,codec", MATRIX)
def test_commit_matrix_decodes_exactly(tmp_path, magic, codec):
    specs = _spec(magic)
    log_offsets = _write_partition(tmp_path, magic, codec, specs)
    tables, stats = decode_scope(offsets_segments([tmp_path]))
    assert tables["raw/quarantine"].num_rows == 0, tables["raw/quarantine"].to_pylist()
    got = tables["raw/offset_commits"].to_pylist()
    expected = []
    for s in specs:
        t, vv = s["tombstone"], s["value_version"]
        expected.append(
            dict(
                group_id=s["group"],
                topic=s["topic"],
                partition=s["partition"],
                committed_offset=None if t else s["offset"],
                leader_epoch=None if t or vv < 3 else s["epoch"],
                metadata=None if t else s["metadata"],
                commit_timestamp=None if t else _ts(s["commit_ts"]),
                expire_timestamp=_ts(s["expire_ts"]) if not t and vv == 1 else None,
                is_tombstone=t,
                key_version=s["key_version"],
                value_version=None if t else vv,
                offsets_partition=11,
                log_offset=log_offsets[id(s)],
                producer_id=TXN[s["state"]][0] if s["state"] else -1,
                is_transactional=s["state"] is not None,
                txn_state=s["state"],
                # the TopicId tag (16 bytes of 0x01) the writer above adds; Kafka's text form by hand
                topic_id="AQEBAQEBAQEBAQEBAQEBAQ" if not t and vv == 4 and s["partition"] % 2 else None,
            )
        )
    expected.sort(key=lambda r: r["log_offset"])
    for row in got:
        assert row.pop("segment_file").endswith(segment_name(0))
    assert got == expected
    assert stats["records"] == len(specs) + (3 if magic == 2 else 0)  # + 3 markers


def _member(i, sub_version, asg_version, instance):
    return dict(
        member_id=f"consumer-{i}-{'x' * i}",
        group_instance_id=f"instance-{i}" if instance else None,
        client_id=f"client-{i}",
        client_host=f"/10.0.0.{i}",
        rebalance_timeout=60_000 + i,
        session_timeout=10_000 + i,
        subscription=subscription(
            ["orders", f"topic-{i}"],
            version=sub_version,
            owned={"orders": [i]},
            generation=5,
            rack="rack-a",
            user_data=b"\x00\x01" if i % 2 else None,
        ),
        assignment=assignment({"orders": [i, i + 10], f"topic-{i}": [0]}, version=asg_version, user_data=b"u"),
    )


@pytest.mark.parametrize("value_version", range(5))
@pytest.mark.parametrize("sub_version", [0, 1, 2, 3, 4])
def test_group_metadata_matrix_decodes_exactly(tmp_path, value_version, sub_version):
    asg_version = min(sub_version, 3)
    members = [_member(i, sub_version, asg_version, value_version >= 3) for i in (1, 2)]
    records = [
        (group_metadata_key("billing"),
         group_metadata_value(generation=4, protocol="range", leader=members[0]["member_id"], state_ts=T0,
                              members=members, version=value_version)),
        (group_metadata_key("connect-x"),
         group_metadata_value(protocol_type="connect", generation=2, protocol="sessioned", leader="w1",
                              members=[dict(members[0], subscription=b"\xff", assignment=b"\xff")],
                              version=value_version)),
        (group_metadata_key("empty"),
         group_metadata_value(generation=9, protocol=None, leader=None, members=[], version=value_version)),
        (group_metadata_key("gone"), None),
    ]
    write_segment(tmp_path / "__consumer_offsets-3" / segment_name(100),
                  [batch(records[:2], base_offset=100, timestamp_ms=T0),
                   batch(records[2:], base_offset=102, timestamp_ms=T0, codec="lz4")])
    tables, _ = decode_scope(offsets_segments([tmp_path / "__consumer_offsets-3"]))
    assert tables["raw/quarantine"].num_rows == 0
    gm = [{k: r[k] for k in ("group_id", "generation", "protocol_type", "protocol", "leader", "state_timestamp",
                             "is_tombstone", "value_version", "log_offset")}
          for r in tables["raw/group_metadata"].to_pylist()]
    state = _ts(T0) if value_version >= 2 else None
    assert gm == [
        dict(group_id="billing", generation=4, protocol_type="consumer", protocol="range",
             leader=members[0]["member_id"], state_timestamp=state, is_tombstone=False, value_version=value_version,
             log_offset=100),
        dict(group_id="connect-x", generation=2, protocol_type="connect", protocol="sessioned", leader="w1",
             state_timestamp=None, is_tombstone=False, value_version=value_version, log_offset=101),
        dict(group_id="empty", generation=9, protocol_type="consumer", protocol=None, leader=None,
             state_timestamp=None, is_tombstone=False, value_version=value_version, log_offset=102),
        dict(group_id="gone", generation=None, protocol_type=None, protocol=None, leader=None,
             state_timestamp=None, is_tombstone=True, value_version=None, log_offset=103),
    ]
    got_members = [{k: r[k] for k in ("group_id", "generation", "member_id", "group_instance_id", "client_id",
                                      "client_host", "session_timeout_ms", "rebalance_timeout_ms", "subscribed_topics",
                                      "log_offset")}
                   for r in tables["raw/group_members"].to_pylist()]
    exp_members = []
    for gid, gen, lo, topics in (("billing", 4, 100, True), ("connect-x", 2, 101, False)):
        for m in members if gid == "billing" else members[:1]:
            exp_members.append(dict(group_id=gid, generation=gen, member_id=m["member_id"],
                                    group_instance_id=m["group_instance_id"] if value_version >= 3 else None,
                                    client_id=m["client_id"], client_host=m["client_host"],
                                    session_timeout_ms=m["session_timeout"],
                                    rebalance_timeout_ms=m["rebalance_timeout"] if value_version >= 1
                                    else m["session_timeout"],
                                    subscribed_topics=["orders", f"topic-{m['member_id'].split('-')[1]}"] if topics
                                    else [],
                                    log_offset=lo))
    assert got_members == exp_members
    got_asg = [(r["group_id"], r["member_id"], r["topic"], r["partition"], r["generation"])
               for r in tables["raw/group_assignments"].to_pylist()]
    assert got_asg == [("billing", m["member_id"], t, p, 4)
                       for i, m in zip((1, 2), members, strict=True)
                       for t, ps in (("orders", [i, i + 10]), (f"topic-{i}", [0])) for p in ps]


def test_coordinator_record_types_are_kept_raw(tmp_path):
    """Key types 3-24 with values of a version no schema knows, and unknown key types: kept
    with their bytes. Tombstones and share/streams group values are decoded
    (``test_kafka_kip848.py`` checks their rows)."""
    import struct

    with_member = (5, 7, 8, 10, 13, 14, 16, 19, 21, 22)

    def key(t, group):
        g = group.encode()
        return struct.pack(">hh", t, len(g)) + g + (b"\x00\x02m1" if t in with_member else b"")

    records = [(key(t, f"grp-{t}"), bytes([t]) * 3 if t % 4 else None) for t in range(3, 25)]
    records.append((struct.pack(">h", 99) + b"opaque", b"v"))  # a key type this version does not know
    write_segment(tmp_path / "__consumer_offsets-1" / segment_name(0),
                  [batch(records, base_offset=0, timestamp_ms=T0, codec="zstd")])
    tables, _ = decode_scope(offsets_segments([tmp_path]))
    assert tables["raw/quarantine"].num_rows == 0
    rows = tables["raw/coordinator_records"].to_pylist()
    consumer = (3, 4, 5, 6, 7, 8, 16)  # version 0x0303 of their values is unknown: raw
    expected = [dict(key_type=t, group_id=f"grp-{t}", key=k, value=v, offsets_partition=1, log_offset=i)
                for i, ((k, v), t) in enumerate(zip(records, range(3, 25), strict=False))
                if t in consumer and v is not None]
    expected.append(
        dict(key_type=99, group_id=None, key=records[-1][0], value=b"v", offsets_partition=1, log_offset=22)
    )
    for r in rows:
        assert r.pop("segment_file").endswith(segment_name(0))
    assert rows == expected
    generic = tables["raw/group_coordinator_records"].to_pylist()
    assert [(r["key_type"], r["value"]) for r in generic] == [
        (t, v) for (k, v), t in zip(records, range(3, 25), strict=False) if t not in consumer]
