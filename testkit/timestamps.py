"""Data-topic partitions with known record timestamps, magic-2 batches built with
kafka-python's ``DefaultRecordBatchBuilder`` (magic 1: ``testkit.segments.batch``), and
``.timeindex`` files written as Kafka's ``TimeIndex`` writes them.

What a builder cannot do by itself is patched as a broker does it, with the CRC recomputed:
broker-assigned base offsets; LogAppendTime (``LogValidator`` sets attribute bit 3 and
maxTimestamp = the append time, the records keep their create times); compaction (a rewritten
batch keeps its base offset and last offset delta, holds only the retained records, and its
baseTimestamp is the first retained record's, as ``MemoryRecords.filterTo`` rebuilds it).
Every magic-2 batch is parsed back by kafka-python's ``DefaultRecordBatch``.
"""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

_ATTR, _CRC, _LAST_DELTA, _MAX_TS = 21, 17, 23, 35
LOG_APPEND_TIME = 0x08


def v2_batch(offsets: list[int], timestamps: list[int], *, base_offset: int, last_offset: int | None = None,
             log_append_time: int | None = None) -> bytes:
    """A magic-2 batch holding records at ``offsets`` (absolute; a compacted batch skips some)
    with create ``timestamps``; ``log_append_time`` makes it a LogAppendTime batch."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for o, ts in zip(offsets, timestamps, strict=True):
        b.append(o - base_offset, ts, b"k%d" % o, b"v" * 20, [])
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    if last_offset is not None:
        struct.pack_into(">i", buf, _LAST_DELTA, last_offset - base_offset)
    if log_append_time is not None:
        attrs = struct.unpack_from(">h", buf, _ATTR)[0] | LOG_APPEND_TIME
        struct.pack_into(">h", buf, _ATTR, attrs)
        struct.pack_into(">q", buf, _MAX_TS, log_append_time)
    struct.pack_into(">I", buf, _CRC, crc32c.crc32c(bytes(buf[_ATTR:])))
    out = bytes(buf)
    check = DefaultRecordBatch(out)
    assert check.validate_crc() and check.base_offset == base_offset
    assert check.timestamp_type == (1 if log_append_time is not None else 0)
    return out


def time_index(entries: list[tuple[int, int]], base_offset: int) -> bytes:
    """``TimeIndex`` entries: timestamp int64 + offset relative to the segment int32, big-endian."""
    return b"".join(struct.pack(">qi", ts, off - base_offset) for ts, off in entries)


def write_partition(d: Path, segments: list[list[bytes]], index_interval: int = 1) -> None:
    """Segments of ``batches`` named by their first batch's base offset, each with the
    ``.timeindex`` Kafka's ``LogSegment.append`` writes: (max timestamp so far, last offset of
    the batch holding it) every ``index_interval`` batches, when the max timestamp grew."""
    d.mkdir(parents=True, exist_ok=True)
    for batches in segments:
        base = DefaultRecordBatch(batches[0]).base_offset
        (d / f"{base:020d}.log").write_bytes(b"".join(batches))
        entries, top = [], -1
        for i, raw in enumerate(batches):
            rb = DefaultRecordBatch(raw)
            max_ts = struct.unpack_from(">q", raw, _MAX_TS)[0]
            last = rb.base_offset + struct.unpack_from(">i", raw, _LAST_DELTA)[0]
            if max_ts > top and i % index_interval == 0:
                top = max_ts
                entries.append((max_ts, last))
        (d / f"{base:020d}.timeindex").write_bytes(time_index(entries, base))
        (d / f"{base:020d}.index").write_bytes(b"")
