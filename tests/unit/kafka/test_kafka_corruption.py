"""One test per kind of corruption: the quarantine row (file:byte position, reason) and no
good batch lost before or after it (where the framing allows)."""

from __future__ import annotations

import struct

import pytest

from pipelines.kafka.segment import decode_segment
from testkit.segments import (
    batch,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    write_segment,
)

T0 = 1_700_000_000_000


def _commit(i, version=3):
    return (offset_commit_key("g", "t", i), offset_commit_value(i * 10, commit_ts=T0 + i, version=version))


def _batches(magic=2, codec="none"):
    """Three batches of two commits each, at offsets 0-1, 2-3, 4-5."""
    return [batch([_commit(2 * j), _commit(2 * j + 1)], base_offset=2 * j, magic=magic, codec=codec, timestamp_ms=T0)
            for j in range(3)]


def _decode(tmp_path, parts: list[bytes]):
    seg = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_segment(seg, parts)
    res = decode_segment(seg, 0)
    q = [(r["source"], r["location"].rsplit(":", 1)[1], r["reason"], r["raw"])
         for r in res.tables["raw/quarantine"].to_pylist()]
    offsets = res.tables["raw/offset_commits"]["log_offset"].to_pylist()
    return q, offsets, str(seg)


def _flip(b: bytes, pos: int) -> bytes:
    return b[:pos] + bytes([b[pos] ^ 0xFF]) + b[pos + 1 :]


@pytest.mark.parametrize("magic,kind", [(2, "CRC-32C"), (1, "CRC-32"), (0, "CRC-32")])
def test_crc_mismatch_quarantines_the_batch_only(tmp_path, magic, kind):
    a, b, c = _batches(magic)
    bad = _flip(b, len(b) - 3)  # inside the last record's value
    q, offsets, _ = _decode(tmp_path, [a, bad, c])
    assert len(q) == 1
    source, pos, reason, raw = q[0]
    # magic 2: the batch; magic 0/1: the flipped message, the second of the two in ``b``
    assert (source, int(pos)) == ("offsets", len(a) + (0 if magic == 2 else len(b) // 2))
    assert reason.startswith("CrcMismatch:") and kind in reason
    if magic == 2:
        assert raw == bad and offsets == [0, 1, 4, 5]
    else:  # magic 0/1: one message per record, only the flipped message is lost
        assert raw in bad and offsets == [0, 1, 2, 4, 5]


def test_crc_mismatch_in_compressed_wrapper(tmp_path):
    a, b, c = _batches(1, "gzip")
    q, offsets, _ = _decode(tmp_path, [a, _flip(b, len(b) - 5), c])
    assert [(p, r.split(":")[0]) for _, p, r, _ in q] == [(str(len(a)), "CrcMismatch")]
    assert offsets == [0, 1, 4, 5]


def test_impossible_length_resyncs_at_next_batch(tmp_path):
    a, b, c = _batches()
    bad = b[:8] + struct.pack(">i", 7) + b[12:]  # below the 49 bytes of any magic-2 batch
    q, offsets, _ = _decode(tmp_path, [a, bad, c])
    assert len(q) == 1
    _, pos, reason, raw = q[0]
    assert int(pos) == len(a) and reason.startswith("ImpossibleLength: impossible batch length 7")
    assert raw == bad
    assert offsets == [0, 1, 4, 5]


def test_length_past_end_of_file_mid_segment_resyncs(tmp_path):
    a, b, c = _batches()
    bad = b[:8] + struct.pack(">i", 1 << 30) + b[12:]
    q, offsets, _ = _decode(tmp_path, [a, bad, c])
    assert [(int(p), r.split(":")[0]) for _, p, r, _ in q] == [(len(a), "ImpossibleLength")]
    assert "runs past the end of the file" in q[0][2]
    assert offsets == [0, 1, 4, 5]


def test_unknown_magic(tmp_path):
    a, b, c = _batches()
    bad = b[:16] + b"\x07" + b[17:]
    q, offsets, _ = _decode(tmp_path, [a, bad, c])
    assert [(int(p), r) for _, p, r, _ in q] == [
        (len(a), f"UnknownMagic: unknown magic 7; skipped {len(b)} bytes to the next valid batch")
    ]
    assert offsets == [0, 1, 4, 5]


@pytest.mark.parametrize("cut", [5, 30, 80])
def test_truncated_tail_keeps_everything_before(tmp_path, cut):
    a, b, c = _batches()
    q, offsets, _ = _decode(tmp_path, [a, b, c[:cut]])
    assert len(q) == 1
    _, pos, reason, raw = q[0]
    assert int(pos) == len(a) + len(b) and reason.startswith("TruncatedBatch: batch cut off at end of file")
    assert raw == c[:cut]
    assert offsets == [0, 1, 2, 3]


def test_undecodable_key_quarantines_the_record_only(tmp_path):
    bad_keys = [b"\x00", b"\xff\xfb\x00\x01g", offset_commit_key("g", "t", 1)[:-2], None]
    recs = [_commit(0)] + [(k, b"\x00\x03" + b"\x00" * 20) for k in bad_keys] + [_commit(5)]
    b = batch(recs, base_offset=0, timestamp_ms=T0)
    q, offsets, _ = _decode(tmp_path, [b])
    assert offsets == [0, 5]
    assert [r.split(":")[0] for _, _, r, _ in q] == ["UndecodableKey"] * 4
    assert [r.split("(")[-1] for _, _, r, _ in q] == [f"log offset {i})" for i in (1, 2, 3, 4)]
    positions = [int(p) for _, p, _, _ in q]
    assert positions == sorted(positions) and all(61 < p < len(b) for p in positions)  # the records' own bytes


@pytest.mark.parametrize(
    "value,why",
    [
        (offset_commit_value(1, commit_ts=T0)[:-3], "value runs past its bytes"),
        (b"\x00\x09" + b"\x00" * 30, "unknown OffsetCommitValue version 9"),
        (b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\xff\xf0", "bad string length in value"),
    ],
)
def test_undecodable_commit_value(tmp_path, value, why):
    b = batch(
        [_commit(0), (offset_commit_key("g", "t", 1), value), _commit(2)], base_offset=0, timestamp_ms=T0, codec="gzip"
    )
    q, offsets, _ = _decode(tmp_path, [b])
    assert offsets == [0, 2]
    # compressed: batch position
    assert [(int(p), r) for _, p, r, _ in q] == [(0, f"UndecodableValue: {why} (log offset 1)")]
    assert q[0][3] == value


def test_undecodable_group_metadata_and_embedded_protocol(tmp_path):
    good = group_metadata_value(generation=1, protocol="range", leader="m", members=[])
    member = dict(
        member_id="m", client_id="c", client_host="h", subscription=b"\x00\x00\x00\x00\x00\x05", assignment=b"\x00"
    )
    recs = [
        (group_metadata_key("a"), good[:-6]),
        (group_metadata_key("b"), group_metadata_value(generation=2, protocol="range", leader="m", members=[member])),
        (group_metadata_key("c"), good),
    ]
    q, _, seg = _decode(tmp_path, [batch(recs, base_offset=0, timestamp_ms=T0)])
    reasons = [r for _, _, r, _ in q]
    assert reasons[0].startswith("UndecodableValue: GroupMetadataValue:") and reasons[0].endswith("(log offset 0)")
    assert reasons[1].startswith("UndecodableValue: subscription of member m of group b")
    assert reasons[2].startswith("UndecodableValue: assignment of member m of group b")
    res = decode_segment(seg, 0)
    assert [r["group_id"] for r in res.tables["raw/group_metadata"].to_pylist()] == ["b", "c"]
    # the member is kept, its subscription unknown (null), no assignment rows
    assert [(m["member_id"], m["subscribed_topics"]) for m in res.tables["raw/group_members"].to_pylist()] == [
        ("m", None)
    ]
    assert res.tables["raw/group_assignments"].num_rows == 0


def test_corrupt_compressed_payload_with_valid_crc(tmp_path):
    import crc32c

    a, b, c = _batches(2, "gzip")
    body = bytearray(b)
    body[61 + 10] ^= 0xFF  # inside the gzip stream, then a correct CRC over it
    struct.pack_into(">I", body, 17, crc32c.crc32c(bytes(body[21:])))
    q, offsets, _ = _decode(tmp_path, [a, bytes(body), c])
    assert [(int(p), r.split(":")[0]) for _, p, r, _ in q] == [(len(a), "CorruptRecords")]
    assert offsets == [0, 1, 4, 5]


def test_garbage_between_batches_is_skipped(tmp_path):
    a, b, c = _batches()
    junk = b"\x00" * 7 + b"\x13" * 40
    q, offsets, _ = _decode(tmp_path, [a, junk, b, c])
    assert [(int(p), raw) for _, p, _, raw in q] == [(len(a), junk)]
    assert offsets == [0, 1, 2, 3, 4, 5]


def test_random_damage_never_crashes_and_never_invents_rows():
    """Seeded bit flips, cuts and insertions over a mixed segment (magic 0/1/2, codecs, v4
    values, group metadata): the decoder never raises, and every row it keeps is a row of the
    undamaged segment. (Log offsets are compared out: Kafka's CRCs do not cover the base
    offset of a batch or message, so a flip there is undetectable by design.)"""
    import random

    import numpy as np

    from testkit.segments import assignment, subscription

    parts, off = [], 0
    for magic in (0, 1, 2):
        for codec in ["none", "gzip", "snappy", "lz4"] + (["zstd"] if magic == 2 else []):
            recs = [_commit(off + i, version=1 if magic < 2 else 4) for i in range(3)]
            parts.append(batch(recs, base_offset=off, magic=magic, codec=codec, timestamp_ms=T0))
            off += 3
    member = dict(member_id="m", client_id="c", client_host="h", subscription=subscription(["t"], version=3),
                  assignment=assignment({"t": [0]}))
    metadata = group_metadata_value(generation=1, protocol="range", leader="m", members=[member], version=4)
    parts.append(batch([(group_metadata_key("g"), metadata)], base_offset=off, timestamp_ms=T0))
    clean = b"".join(parts)

    def rows(data: bytes):
        res = decode_segment("/fuzz/00000000000000000000.log", 0, np.frombuffer(data, np.uint8).copy())
        commits = {(r["committed_offset"], r["partition"], r["commit_timestamp"])
                   for r in res.tables["raw/offset_commits"].to_pylist()}
        groups = {(r["group_id"], r["generation"]) for r in res.tables["raw/group_metadata"].to_pylist()}
        return commits, groups, res.tables["raw/quarantine"].num_rows

    all_commits, all_groups, q = rows(clean)
    assert len(all_commits) == off and len(all_groups) == 1 and q == 0
    rng = random.Random(20240611)
    for _ in range(150):
        b = bytearray(clean)
        for _ in range(rng.randint(1, 4)):
            p, kind = rng.randrange(len(b)), rng.random()
            if kind < 0.6:
                b[p] ^= 1 << rng.randrange(8)
            elif kind < 0.8:
                del b[p : p + rng.randint(1, 50)]
            else:
                b[p:p] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
        commits, groups, quarantined = rows(bytes(b))
        assert commits <= all_commits and groups <= all_groups
        assert quarantined > 0 or (commits == all_commits and groups == all_groups)
