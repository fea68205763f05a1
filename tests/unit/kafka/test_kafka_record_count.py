"""A magic-2 batch whose recordCount lies under a valid CRC (CRC-32C covers the count: the
bytes were written so) keeps the records its bytes hold; the claim is quarantined with the
batch's file:byte and reason. Batches written by kafka-python's record builders
(testkit.segments), then the count patched and the CRC-32C recomputed with the ``crc32c``
package."""

from __future__ import annotations

import struct

import crc32c
import pytest

from pipelines.kafka.segment import decode_segment
from testkit.segments import batch, offset_commit_key, offset_commit_value, write_segment

T0 = 1_700_000_000_000
COUNT_AT, CRC_AT, CRC_FROM = 57, 17, 21  # recordCount, crc and the bytes it covers (DefaultRecordBatch)


def _commit(i: int):
    return offset_commit_key("g", "t", i), offset_commit_value(i * 10, commit_ts=T0 + i, version=3)


def _batches(codec: str = "none") -> list[bytes]:
    """Three batches of two commits each, at offsets 0-1, 2-3, 4-5."""
    return [batch([_commit(2 * j), _commit(2 * j + 1)], base_offset=2 * j, codec=codec, timestamp_ms=T0)
            for j in range(3)]


def _patch(b: bytes, count: int) -> bytes:
    out = bytearray(b)
    struct.pack_into(">i", out, COUNT_AT, count)
    struct.pack_into(">I", out, CRC_AT, crc32c.crc32c(bytes(out[CRC_FROM:])))
    return bytes(out)


def _decode(tmp_path, parts: list[bytes]):
    seg = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_segment(seg, parts)
    res = decode_segment(seg, 0)
    q = res.tables["raw/quarantine"].to_pylist()
    commits = res.tables["raw/offset_commits"].to_pylist()
    return q, [(c["log_offset"], c["partition"], c["committed_offset"]) for c in commits], str(seg)


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
@pytest.mark.parametrize("count", [2**31 - 1, 3, -1])
def test_a_count_beyond_the_records_keeps_them_and_quarantines_the_claim(tmp_path, codec, count):
    a, b, c = _batches(codec)
    q, commits, seg = _decode(tmp_path, [a, _patch(b, count), c])
    assert commits == [(i, i, i * 10) for i in range(6)]  # every record, those of the damaged batch too
    assert [(r["source"], r["location"], r["reason"]) for r in q] == [
        ("offsets", f"{seg}:{len(a)}",
         f"RecordCountMismatch: magic-2 batch claims {count} records, its bytes hold 2 (offsets 2-3, read)")]
    assert q[0]["raw"] == _patch(b, count)[:61]  # the header that makes the claim


def test_a_count_below_the_records_keeps_those_claimed_and_quarantines_the_rest(tmp_path):
    a, b, c = _batches()
    q, commits, seg = _decode(tmp_path, [a, _patch(b, 1), c])
    assert [o for o, _, _ in commits] == [0, 1, 2, 4, 5]
    second = len(a) + 61 + len(b[61:]) // 2  # both records are the same size: the second starts halfway
    assert [(r["location"], r["reason"].split(";")[0]) for r in q] == [
        (f"{seg}:{second}", "RecordCountMismatch: magic-2 batch claims 1 records")]
    assert q[0]["raw"] == b[second - len(a):]


def test_a_record_that_does_not_parse_keeps_the_records_before_it(tmp_path):
    """The second record's length varint made negative (0x01: zig-zag -1), under a valid CRC."""
    a, b, c = _batches()
    second = 61 + len(b[61:]) // 2
    damaged = bytearray(b)
    damaged[second] = 0x01
    damaged = _patch(bytes(damaged), 2)
    q, commits, seg = _decode(tmp_path, [a, damaged, c])
    assert [o for o, _, _ in commits] == [0, 1, 2, 4, 5]
    assert [(r["location"], r["reason"]) for r in q] == [
        (f"{seg}:{len(a) + second}",
         "CorruptRecords: a record of a CRC-valid batch does not parse; 1 record(s) before it read (offsets 2-2)")]
