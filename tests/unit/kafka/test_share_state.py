"""``__share_group_state`` decoding: bytes written by a real Kafka 4.2.2 broker (the fixture
``pipelines/demo/real/share-4.2.2``, with the cluster's own answers), and hand-built
records for what a broker does not write on request (tombstones, unknown tags, damage)."""

from __future__ import annotations

import base64
import json
import struct

import pytest

from pipelines.demo import REAL
from pipelines.kafka.errors import DecodeError
from pipelines.kafka.share_state import decode_key, decode_paths, decode_value, share_state_segments
from testkit.segments import batch, write_segment

FIXTURE = REAL / "share-4.2.2"


@pytest.fixture(scope="module")
def real():
    table, bad, stats = decode_paths([FIXTURE / "logs"])
    return table.to_pylist(), bad, stats, json.loads((FIXTURE / "oracle.json").read_text())


def _last(rows, group, partition, field):
    """The field's last value (not -1) of a share-partition, in log order."""
    vals = [r[field] for r in sorted(rows, key=lambda r: r["log_offset"])
            if r["group_id"] == group and r["partition"] == partition and r[field] not in (None, -1)]
    return vals[-1]


def test_every_record_of_a_real_broker_decodes(real):
    rows, bad, stats, oracle = real
    assert not bad
    assert stats["share_state_records"] == len(rows) == 10
    assert {r["record_type"] for r in rows} == {"ShareSnapshot", "ShareUpdate"}
    assert {r["topic_id"] for r in rows} == {oracle["topic_ids"]["orders"]}
    assert {r["group_id"] for r in rows} == set(oracle["groups"])
    assert all(r["is_replayable"] and r["value_version"] == 0 and r["unknown_tagged_fields"] is None for r in rows)
    snapshots = [r for r in rows if r["record_type"] == "ShareSnapshot"]
    # a snapshot carries its creation and write times; an update neither nor a state epoch
    assert all(r["create_timestamp"] is not None and r["state_epoch"] == 1 for r in snapshots)
    assert all(r["state_epoch"] is None and r["write_timestamp"] is None for r in rows if r not in snapshots)


def test_start_offsets_and_delivery_complete_counts_are_the_brokers(real):
    rows, _, _, oracle = real
    ends = oracle["log_end_offsets"]
    for group, g in oracle["groups"].items():
        for tp, start in g["start_offsets"].items():
            p = int(tp.split(":")[1])
            assert _last(rows, group, p, "start_offset") == start, (group, tp)
            # the broker's lag (KIP-1226): log end - start - records whose delivery completed
            assert _last(rows, group, p, "delivery_complete_count") == ends[tp] - start - g["lag"][tp], (group, tp)


def test_the_poison_record_is_archived_at_the_delivery_limit(real):
    rows, _, _, oracle = real
    did = oracle["did"]
    poison = [(r["log_offset"], b) for r in rows if r["group_id"] == "share-poison"
              and r["partition"] == did["poison_partition"] for b in r["state_batches"] or []
              if b["first_offset"] <= did["poison_offset"] <= b["last_offset"]]
    last = max(poison, key=lambda x: x[0])[1]
    assert last["delivery_state_name"] == "ARCHIVED"
    assert last["delivery_count"] == did["poison_deliveries"]["share-poison"] == 3
    # released before: available again with a growing delivery count
    assert [b["delivery_count"] for _, b in sorted(poison, key=lambda x: x[0])] == [1, 2, 3]
    healthy = [b for r in rows if r["group_id"] == "share-healthy" for b in r["state_batches"] or []]
    assert healthy and all(b["delivery_state_name"] == "ACKNOWLEDGED" and b["delivery_count"] == 1 for b in healthy)


# --- hand-built records -------------------------------------------------------------------------

TOPIC = bytes(range(16))


def key(kind: int, group: str = "g", partition: int = 3) -> bytes:
    g = group.encode()
    return struct.pack(">hh", kind, len(g)) + g + TOPIC + struct.pack(">i", partition)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def update_value(start: int, batches: list[tuple[int, int, int, int]], tags: bytes = b"\x00") -> bytes:
    body = struct.pack(">hiiq", 0, 7, 2, start)
    body += uvarint(len(batches) + 1)
    for first, last, state, count in batches:
        body += struct.pack(">qqbh", first, last, state, count) + b"\x00"
    return body + tags


def test_key_layout_and_errors():
    kind, group, topic_id, partition = decode_key(key(1, "grupa-ż", 7))
    assert (kind, group, partition) == (1, "grupa-ż", 7)
    assert topic_id == base64.urlsafe_b64encode(TOPIC)[:22].decode()
    for bad in (key(2), key(0)[:-1], key(0) + b"\x00", b"\x00"):
        with pytest.raises(DecodeError):
            decode_key(bad)


def test_update_value_with_tagged_fields():
    # tag 0 = DeliveryCompleteCount (int32), tag 9 unknown to the schema
    tags = uvarint(2) + uvarint(0) + uvarint(4) + struct.pack(">i", 11) + uvarint(9) + uvarint(2) + b"\xab\xcd"
    version, v = decode_value(1, update_value(5, [(5, 9, 2, 1), (10, 10, 4, 5)], tags))
    assert version == 0
    assert (v["snapshotEpoch"], v["leaderEpoch"], v["startOffset"], v["deliveryCompleteCount"]) == (7, 2, 5, 11)
    assert v["stateBatches"] == [
        {"firstOffset": 5, "lastOffset": 9, "deliveryState": 2, "deliveryCount": 1},
        {"firstOffset": 10, "lastOffset": 10, "deliveryState": 4, "deliveryCount": 5},
    ]
    assert v["_unknownTaggedFields"] == {"9": base64.b64encode(b"\xab\xcd").decode()}
    _, v = decode_value(1, update_value(-1, []))
    assert v["deliveryCompleteCount"] == -1 and v["startOffset"] == -1  # the tag's default: not set
    assert decode_value(1, struct.pack(">h", 3) + b"\x00")[1] is None  # a version no schema knows


def test_segment_with_tombstone_unknown_version_and_damage(tmp_path):
    good = update_value(0, [(0, 4, 2, 1)])
    snapshot = struct.pack(">hiiiq", 0, 1, 1, 0, 0) + struct.pack(">qq", 1000, 1000) + uvarint(1) + b"\x00"
    seg = tmp_path / "logs" / "__share_group_state-2" / "00000000000000000000.log"
    write_segment(seg, [batch([(key(1), good)], base_offset=0, timestamp_ms=1000),  # before any snapshot
                        batch([(key(0), snapshot), (key(1), good)], base_offset=1, timestamp_ms=2000),
                        batch([(key(1), good[:-3])], base_offset=3, timestamp_ms=3000),  # truncated value
                        batch([(b"\x00\x07zz", good)], base_offset=4, timestamp_ms=3000),  # bad key
                        batch([(key(0), struct.pack(">h", 9) + b"\x00"), (key(0), None)], base_offset=5,
                              timestamp_ms=4000)])
    assert share_state_segments([tmp_path / "logs"]) == [(2, seg)]
    table, bad, stats = decode_paths([tmp_path / "logs"])
    rows = table.to_pylist()
    assert [(r["log_offset"], r["record_type"], r["is_replayable"]) for r in rows] == [
        (0, "ShareUpdate", False), (1, "ShareSnapshot", True), (2, "ShareUpdate", True),
        (3, "ShareUpdate", True), (5, "ShareSnapshot", True), (6, "ShareSnapshot", True)]
    assert rows[1]["state_batches"] == [] and rows[1]["write_timestamp"].timestamp() == 1.0
    assert rows[2]["state_batches"][0] == dict(first_offset=0, last_offset=4, delivery_state=2,
                                               delivery_state_name="ACKNOWLEDGED", delivery_count=1)
    assert rows[3]["value"] == good[:-3] and rows[3]["state_batches"] is None  # kept raw, and quarantined
    assert rows[4]["value_version"] == 9 and rows[4]["value"] is not None  # unknown version: kept raw
    assert rows[5]["is_tombstone"] and rows[5]["value"] is None
    assert all(r["state_partition"] == 2 for r in rows)
    assert [b["location"].rsplit(":", 1)[0] for b in bad] == [str(seg)] * 2
    assert ["UndecodableValue" in b["reason"] for b in bad] == [True, False]
    assert stats["share_state_records"] == 6
