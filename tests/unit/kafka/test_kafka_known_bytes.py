"""Tables of known bytes: FORMATS.md's real v4 value, hand-checked headers, codec framings."""

from __future__ import annotations

import zlib

import crc32c
import numpy as np
import pytest

from pipelines.kafka import kernels as K
from pipelines.kafka.batches import NO_BOUNDS, _fix_lz4_header_checksum, decompress
from pipelines.kafka.records import (
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_VALUE,
    decode,
    key_ops,
    offset_value_ops,
)

# (value bytes, version, offset, leader_epoch, metadata, commit_ts, expire_ts)
OFFSET_VALUES = [
    # FORMATS.md: real bytes of a Kafka 4.1 broker (v4, flexible, empty tagged fields)
    ("0004 000000000021d4a8 ffffffff 01 0000019964f2d836 00", 4, 0x21D4A8, -1, "", 0x19964F2D836, -1),
    # v4 with metadata "ab" and tag 0 (TopicId, 16 bytes) that must be skipped
    ("0004 0000000000000007 00000003 03 6162 0000000000000064 01 00 10" + "11" * 16, 4, 7, 3, "ab", 100, -1),
    # v3: offset, leaderEpoch, metadata (int16 length), commitTimestamp
    ("0003 0000000000000005 00000002 0000 0000000000000009", 3, 5, 2, "", 9, -1),
    # v1: offset, metadata "x", commitTimestamp, expireTimestamp
    ("0001 0000000000000001 0001 78 0000000000000002 0000000000000003", 1, 1, -1, "x", 2, 3),
    # v0 and v2: offset, metadata, timestamp
    ("0000 ffffffffffffffff 0000 0000000000000000", 0, -1, -1, "", 0, -1),
    ("0002 7fffffffffffffff 0000 8000000000000000", 2, 2**63 - 1, -1, "", -(2**63), -1),
]


def segment_bytes(data: bytes) -> np.ndarray:
    """``data`` as kaudit hands a segment's bytes to the kernels (``segment.read_bytes``: a
    writable uint8 array): the argument types the kernels are compiled for once; a read-only
    array would be another signature, compiled again (numba types them apart)."""
    return np.frombuffer(data, np.uint8).copy()


@pytest.mark.parametrize("hexbytes,version,offset,epoch,metadata,commit_ts,expire_ts", OFFSET_VALUES)
def test_offset_commit_value_known_bytes(hexbytes, version, offset, epoch, metadata, commit_ts, expire_ts):
    data = bytes.fromhex(hexbytes.replace(" ", ""))
    # the Python reader of the field tables
    v, value = decode(OFFSET_COMMIT_VALUE, data)
    got = (v, value["offset"], value["leader_epoch"], value["metadata"], value["commit_timestamp"],
           value["expire_timestamp"])
    assert got == (version, offset, epoch, metadata, commit_ts, expire_ts)
    # the numba kernel reading the same tables compiled to ops
    ops = offset_value_ops()
    buf = segment_bytes(data)
    ver, ints, spos, slen, err = K.decode_flat(buf, np.array([0]), np.array([len(data)]), ops.ops, ops.nops, ops.nints,
                                               ops.nstrs)
    i, s = ops.int_slots, ops.str_slots
    assert (ver[0], err[0]) == (version, 0)
    assert ints[0, i["offset"]] == offset and ints[0, i["commit_timestamp"]] == commit_ts
    if version >= 3:
        assert ints[0, i["leader_epoch"]] == epoch
    if version == 1:
        assert ints[0, i["expire_timestamp"]] == expire_ts
    assert data[spos[0, s["metadata"]] : spos[0, s["metadata"]] + slen[0, s["metadata"]]].decode() == metadata


KEYS = [
    # (key bytes, type, group, topic, partition)
    ("0001 0001 67 0002 7430 0000002a", 1, "g", "t0", 42),
    ("0000 0000 0000 ffffffff", 0, "", "", -1),
    ("0002 0003 616263", 2, "abc", None, None),
    ("0003 0002 6869 0000", 3, "hi", None, None),  # KIP-848 ConsumerGroupMetadataKey: GroupId prefix
]


@pytest.mark.parametrize("hexbytes,ktype,group,topic,partition", KEYS)
def test_record_keys_known_bytes(hexbytes, ktype, group, topic, partition):
    data = bytes.fromhex(hexbytes.replace(" ", ""))
    ops = key_ops()
    ver, ints, spos, slen, err = K.decode_flat(segment_bytes(data), np.array([0]), np.array([len(data)]),
                                               ops.ops, ops.nops, ops.nints, ops.nstrs)
    g = ops.str_slots["group"]
    assert (ver[0], err[0]) == (ktype, 0)
    assert data[spos[0, g] : spos[0, g] + slen[0, g]].decode() == group
    if topic is not None:
        t = ops.str_slots["topic"]
        assert data[spos[0, t] : spos[0, t] + slen[0, t]].decode() == topic
        assert ints[0, ops.int_slots["partition"]] == partition


def test_group_metadata_v4_flexible_known_bytes():
    # v4: compact strings (len+1), compact array, compact bytes, tagged fields per struct
    data = bytes.fromhex(
        "0004" "09636f6e73756d6572" "00000005" "0672616e6765" "026d"  # protocolType, generation, protocol, leader
        "0000000000000064"  # currentStateTimestamp
        "02"  # 1 member
        "026d" "00" "0263" "0268" "000003e8" "000007d0" "01" "01" "00"  # member, null instance id
        "00"  # group tagged fields
    )
    v, g = decode(GROUP_METADATA_VALUE, data)
    assert v == 4
    got = (g["protocol_type"], g["generation"], g["protocol"], g["leader"], g["current_state_timestamp"])
    assert got == ("consumer", 5, "range", "m", 100)
    assert g["members"] == [dict(member_id="m", group_instance_id=None, client_id="c", client_host="h",
                                 rebalance_timeout=1000, session_timeout=2000, subscription=b"", assignment=b"")]


@pytest.mark.parametrize("data", [b"", b"a", b"123456789", bytes(range(256)) * 3, b"\xff" * 1000])
def test_crc_tables_agree_with_reference_implementations(data):
    buf = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(0, np.uint8)
    assert K.crc32_slice8(K.CRC32C_TABLE, buf, 0, len(data)) == crc32c.crc32c(data)
    assert K.crc32_slice8(K.CRC32_TABLE, buf, 0, len(data)) == zlib.crc32(data)
    assert K.crc32c(K.CRC32C_TABLE, buf, 0, len(data)) == crc32c.crc32c(data)


def test_batch_crc_agrees_with_the_library_at_every_alignment():
    """The batch CRC-32C (the SSE 4.2 instruction, 8 bytes at a time, where the CPU has it) at
    every start and end modulo 8, over random bytes."""
    data = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8)
    for start in range(9):
        for end in (start, start + 1, start + 7, start + 8, start + 9, 4096 - start):
            assert K.crc32c(K.CRC32C_TABLE, data, start, end) == crc32c.crc32c(data[start:end].tobytes())


def test_crc_check_values():
    buf = np.frombuffer(b"123456789", dtype=np.uint8)
    assert K.crc32_slice8(K.CRC32C_TABLE, buf, 0, 9) == 0xE3069283  # CRC-32C check value
    assert K.crc32_slice8(K.CRC32_TABLE, buf, 0, 9) == 0xCBF43926  # CRC-32 check value


def test_lz4_magic0_broken_header_checksum_is_accepted():
    from kafka.codec import lz4_encode_old_kafka

    payload = b"offsets " * 50
    old = lz4_encode_old_kafka(payload)
    assert decompress(3, old, magic=0) == payload
    assert _fix_lz4_header_checksum(old) != old  # the checksum really was wrong


def test_snappy_framings():
    from kafka.codec import snappy_encode

    payload = b"group-" * 20000  # several xerial blocks of 32 KiB
    xerial = snappy_encode(payload, xerial_compatible=True)
    assert xerial[:8] == b"\x82SNAPPY\x00"
    assert decompress(2, xerial, magic=2) == payload
    assert decompress(2, snappy_encode(payload, xerial_compatible=False), magic=1) == payload


def test_varints_known_bytes():
    from pipelines.kafka.kernels import _uvarint, _varint

    cases = [("00", 0), ("01", -1), ("02", 1), ("7f", -64), ("8001", 64), ("feffffff0f", 2147483647),
             ("ffffffff0f", -2147483648)]
    for hexbytes, value in cases:
        b = np.frombuffer(bytes.fromhex(hexbytes), np.uint8)
        assert _varint(b, 0, len(b)) == (value, len(b))
    b = np.frombuffer(bytes.fromhex("ac02"), np.uint8)
    assert _uvarint(b, 0, 2) == (300, 2)
    assert _varint(np.frombuffer(b"\x80\x80", np.uint8), 0, 2)[1] == -1  # overrun


def test_v2_batch_header_known_bytes():
    """A control batch (COMMIT of producer 7) written byte by byte from the grammar."""
    records = bytes.fromhex("14" "00" "00" "00" "08" "00000001" "0c" "000000000005" "00")
    body = bytes.fromhex("0030" "00000000" "0000000000000001" "0000000000000001" "0000000000000007" "0000" "ffffffff"
                         "00000001") + records
    crc = crc32c.crc32c(body)
    batch = ((100).to_bytes(8, "big") + (len(body) + 9).to_bytes(4, "big") + bytes(4) + b"\x02"
             + crc.to_bytes(4, "big") + body)
    bt = K.scan_batches(segment_bytes(batch), True, K.CRC32C_TABLE, K.CRC32_TABLE, *NO_BOUNDS)
    row = bt[0]
    assert row[K.B_ERR] == K.OK
    got = (row[K.B_BASE_OFFSET], row[K.B_ATTRS], row[K.B_PRODUCER_ID], row[K.B_COUNT], row[K.B_MAX_TS])
    assert got == (100, 0x30, 7, 1, 1)


def test_dictionary_spans_known_bytes():
    """Spans -> (index per span, distinct spans in order of first use); nulls are -1. 3,000
    distinct words also grow the hash table (1,024 slots) and the dictionary's buffers."""
    words = [b"g1", b"", b"topic", b"g1", None, b"\xc3\xa9t\xc3\xa9", b"topic", b""]
    words += [b"w%05d" % (i % 3000) for i in range(6000)]
    buf = segment_bytes(b"".join(w or b"" for w in words))
    length = np.array([-1 if w is None else len(w) for w in words], dtype=np.int64)
    pos = np.concatenate([[0], np.cumsum(np.maximum(length, 0))[:-1]]).astype(np.int64)
    index, offsets, data = K.dictionary_spans(buf, pos, length)
    distinct = list(dict.fromkeys(w for w in words if w is not None))
    assert [bytes(data[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)] == distinct
    at = {w: i for i, w in enumerate(distinct)}
    assert index.tolist() == [-1 if w is None else at[w] for w in words]
