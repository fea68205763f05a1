"""MirrorMaker 2's offset-sync and checkpoint records: tables of known bytes (hand-checked hex
and kafka-python's protocol types as the independent encoder), typed errors, and the extract
of a segment with damaged records into the raw tables and the quarantine."""

from __future__ import annotations

import pytest
from kafka.protocol.old.types import Int16, Int32, Int64, Schema, String

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.kafka.errors import UndecodableKey, UndecodableValue
from pipelines.kafka.mm2_extract import extract_mm2, mm2_partitions
from pipelines.kafka.mm2_records import (
    UnknownCheckpointVersion,
    decode_checkpoint_key,
    decode_checkpoint_value,
    decode_offset_sync,
)
from pipelines.warehouse.reading import read_arrow
from testkit.segments import batch, write_segment

# kafka-python's encoders of the structs MirrorMaker declares (OffsetSync, Checkpoint)
SYNC_KEY = Schema(("topic", String("utf-8")), ("partition", Int32))
SYNC_VALUE = Schema(("upstreamOffset", Int64), ("offset", Int64))
CP_KEY = Schema(("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
CP_VALUE_V0 = Schema(("version", Int16), ("upstreamOffset", Int64), ("offset", Int64), ("metadata", String("utf-8")))


def sync(topic: str, partition: int, upstream: int, downstream: int) -> tuple[bytes, bytes]:
    return SYNC_KEY.encode([topic, partition]), SYNC_VALUE.encode([upstream, downstream])


def checkpoint(group: str, topic: str, partition: int, upstream: int, downstream: int, meta: str = ""):
    return CP_KEY.encode([group, topic, partition]), CP_VALUE_V0.encode([0, upstream, downstream, meta])


# (key hex, value hex, decoded): hand-checked against OffsetSync.KEY_SCHEMA / VALUE_SCHEMA
KNOWN_SYNCS = [
    ("0006 6f7264657273 00000002", "0000000000000064 0000000000000065",
     dict(topic="orders", partition=2, upstream_offset=100, downstream_offset=101)),
    ("0001 74 7fffffff", "7fffffffffffffff 0000000000000000",
     dict(topic="t", partition=2**31 - 1, upstream_offset=2**63 - 1, downstream_offset=0)),
]


@pytest.mark.parametrize("key,value,want", KNOWN_SYNCS)
def test_offset_sync_known_bytes(key, value, want):
    k, v = bytes.fromhex(key.replace(" ", "")), bytes.fromhex(value.replace(" ", ""))
    assert decode_offset_sync(k, v) == want
    assert (k, v) == sync(want["topic"], want["partition"], want["upstream_offset"], want["downstream_offset"])


@pytest.mark.parametrize("args", [("g", "src.orders", 0, 0, 0, ""), ("grupa-ż", "a.b", 7, 2**40, 2**40 + 1, "m")])
def test_checkpoint_from_kafka_python(args):
    k, v = checkpoint(*args)
    group, topic, partition, up, down, meta = args
    assert decode_checkpoint_key(k) == dict(group_id=group, topic=topic, partition=partition)
    assert decode_checkpoint_value(v) == dict(value_version=0, upstream_offset=up, downstream_offset=down,
                                              metadata=meta)
    # hand-checked: version 0, then the v0 struct
    assert v[:2] == b"\x00\x00" and v[2:10] == up.to_bytes(8, "big")
    assert v[18:20] == len(meta.encode()).to_bytes(2, "big")


def test_typed_errors():
    k, v = sync("t", 0, 1, 2)
    with pytest.raises(UndecodableKey, match="ends at byte"):
        decode_offset_sync(k[:-1], v)
    with pytest.raises(UndecodableKey, match="null"):
        decode_offset_sync(None, v)
    with pytest.raises(UndecodableValue, match="1 bytes follow"):
        decode_offset_sync(k, v + b"\x00")
    with pytest.raises(UndecodableKey, match="length -1"):
        decode_checkpoint_key(b"\xff\xff")
    with pytest.raises(UndecodableKey, match="not UTF-8"):
        decode_checkpoint_key(b"\x00\x01\xff" + b"\x00\x01t" + b"\x00" * 4)
    with pytest.raises(UnknownCheckpointVersion) as err:
        decode_checkpoint_value(b"\x00\x01" + b"\x00" * 18)
    assert err.value.version == 1
    with pytest.raises(UndecodableValue, match="inside upstream_offset"):
        decode_checkpoint_value(b"\x00\x00\x00")


def test_extract_segments_with_damage(tmp_path, warehouse):
    logs = tmp_path / "logs"
    syncs = logs / "mm2-offset-syncs.target.internal-0" / "00000000000000000000.log"
    write_segment(syncs, [batch([sync("orders", 0, 0, 0), sync("orders", 1, 0, 0)], base_offset=0, timestamp_ms=1000),
                          batch([sync("orders", 0, 150, 150)], base_offset=2, timestamp_ms=2000, codec="gzip"),
                          batch([(b"\x00\x09orders", b"\x00" * 16)], base_offset=3, timestamp_ms=3000)])  # bad key
    cps = logs / "source.checkpoints.internal-0" / "00000000000000000000.log"
    v1 = b"\x00\x01" + b"\x00" * 18
    write_segment(cps, [batch([checkpoint("g1", "source.orders", 0, 120, 1), (CP_KEY.encode(["g2", "x", 0]), v1),
                               (CP_KEY.encode(["g3", "x", 0]), b"\x00\x00\x01")], base_offset=0, timestamp_ms=5000)])
    (logs / "orders-0").mkdir()  # a data topic: not read
    assert [(t, n) for t, n, _ in mm2_partitions([logs])] == [("mm2-offset-syncs.target.internal", 0),
                                                             ("source.checkpoints.internal", 0)]
    out = extract_mm2(RunContext(warehouse, "r", quiet=True), [logs])
    assert out == {"offset_syncs": 3, "checkpoints": 2, "files": 2, "quarantine": 3}
    s = read_arrow(warehouse, "raw/mm2_offset_syncs", "r").to_pylist()
    assert [(r["target_alias"], r["topic"], r["partition"], r["upstream_offset"], r["downstream_offset"],
             r["log_offset"]) for r in s] == [("target", "orders", 0, 0, 0, 0), ("target", "orders", 1, 0, 0, 1),
                                              ("target", "orders", 0, 150, 150, 2)]
    assert s[2]["batch_timestamp"].timestamp() == 2.0
    c = read_arrow(warehouse, "raw/mm2_checkpoints", "r").to_pylist()
    assert [(r["source_alias"], r["group_id"], r["upstream_offset"], r["downstream_offset"], r["value_version"],
             r["value"]) for r in c] == [("source", "g1", 120, 1, 0, None), ("source", "g2", None, None, 1, v1)]
    bad = read_arrow(warehouse, "raw/quarantine", "r").to_pylist()
    assert sorted(b["reason"].split(":")[0] for b in bad) == ["UndecodableKey", "UndecodableValue",
                                                               "UnknownCheckpointVersion"]
    assert all(b["location"].rsplit(":", 1)[0] in (str(syncs), str(cps)) for b in bad)


def test_no_mm2_topic_is_an_input_error(tmp_path, warehouse):
    (tmp_path / "orders-0").mkdir()
    with pytest.raises(InputError, match="no MirrorMaker 2 topic"):
        extract_mm2(RunContext(warehouse, "r", quiet=True), [tmp_path])
