"""Record-batch framing of a Kafka log segment and the codecs: bytes -> record spans.

Sources: Apache Kafka ``clients/src/main/java/org/apache/kafka/common/record/``
(``DefaultRecordBatch``, ``DefaultRecord``, ``LegacyRecord``, ``AbstractLegacyRecordBatch``,
``ControlRecordType``, ``KafkaLZ4BlockInputStream``), ``docs/formats.md`` section 1.

Grammar (big-endian)::

    segment      = batch*                                  (a file may end inside a batch)
    batch        = baseOffset int64, length int32, <length bytes>;  magic = byte 16
    magic 2      = partitionLeaderEpoch int32, magic int8 (2),
                   crc uint32   (CRC-32C of attributes .. end)
                   attributes int16 (0-2 codec, 3 timestamp type, 4 transactional,
                                     5 control, 6 delete horizon),
                   lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
                   producerId int64, producerEpoch int16, baseSequence int32,
                   recordCount int32, records (one compressed block if codec != 0)
    record       = length varint, attributes int8, timestampDelta varlong,
                   offsetDelta varint, keyLength varint (-1 null), key,
                   valueLength varint (-1 null), value, headerCount varint,
                   (headerKeyLength varint, key, headerValueLength varint, value)*
    magic 0 / 1  = offset int64, size int32, crc uint32 (CRC-32 of magic .. end),
                   magic int8, attributes int8 (0-2 codec), [timestamp int64 if magic 1],
                   key bytes (int32 length, -1 null), value bytes
    wrapper      = a magic 0/1 message with codec != 0: value = compressed message set;
                   wrapper offset = absolute offset of the LAST inner message; inner
                   offsets absolute (magic 0) or relative 0..n-1 (magic 1)
    control      = magic-2 batch with isControl: one record,
                   key = version int16, type int16 (0 ABORT, 1 COMMIT);
                   value = version int16, coordinatorEpoch int32
    codecs       = 1 gzip, 2 snappy (xerial framing ``\\x82SNAPPY\\0`` + int32 version +
                   int32 compat, then [int32 length][snappy block]*; or plain snappy:
                   uncompressed length uvarint, then the block), 3 lz4 frame (magic 0: header
                   checksum over magic+descriptor, KAFKA-3160), 4 zstd
    offsets      = a segment's batches hold offsets in [its file name's base offset, the next
                   segment's), strictly increasing (``kernels.check_offsets``); record
                   offsetDeltas increase up to lastOffsetDelta

The byte walks are the numba kernels of ``kernels.py``; this module drives them, decompresses
(streaming, each batch up to a size limit: :func:`decompression_limit`) and turns error codes
into typed errors.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np
import xxhash

from pipelines.errors import UsageError
from pipelines.kafka import kernel_tables as K
from pipelines.kafka import native
from pipelines.kafka.errors import (
    CorruptRecords,
    CrcMismatch,
    DecodeError,
    DecompressionBomb,
    FramingError,
    ImpossibleLength,
    OffsetMismatch,
    OffsetOutOfOrder,
    OffsetOutOfRange,
    RecordCountMismatch,
    TruncatedBatch,
    UnknownMagic,
    UnsupportedCodec,
)

V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes: baseOffset .. recordCount
V2_HEADER_SIZE = V2_HEADER.size
LEGACY_KV = struct.Struct(">i")
ATTR_CODEC, ATTR_TRANSACTIONAL, ATTR_CONTROL = 0x07, 0x10, 0x20
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
RAW_CAP = 1 << 20  # quarantine rows keep at most 1 MiB of the bad bytes

# A segment's offset range: (lowest offset, first offset past it, newest segment of its dir).
OffsetBounds = tuple[int, int, bool]
NO_BOUNDS: OffsetBounds = (0, K.NO_OFFSET_LIMIT, False)

# --- decompressed size limit -----------------------------------------------------------------

MAX_RECORD_BYTES_ENV, MAX_BATCH_BYTES_ENV = "KAUDIT_MAX_RECORD_BYTES", "KAUDIT_MAX_BATCH_BYTES"
MAX_RECORD_BYTES, MAX_BATCH_BYTES = 1 << 20, 256 << 20  # defaults
CHUNK = 1 << 20  # streaming decompression step


def _env_bytes(name: str, default: int) -> int:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise UsageError(f"{name}={value!r}: expected a positive number of bytes")
    return n


def decompression_limit(record_count: int | None) -> int:
    """Most bytes one compressed batch may decompress to: its record count times the largest
    record (``KAUDIT_MAX_RECORD_BYTES``, default 1 MiB), at most ``KAUDIT_MAX_BATCH_BYTES``
    (default 256 MiB; also the limit of a legacy wrapper, whose count is unknown)."""
    per_batch = _env_bytes(MAX_BATCH_BYTES_ENV, MAX_BATCH_BYTES)
    if record_count is None:
        return per_batch
    return min(max(record_count, 1) * _env_bytes(MAX_RECORD_BYTES_ENV, MAX_RECORD_BYTES), per_batch)


class _Output:
    """Decompressed chunks, refused past ``limit`` bytes."""

    def __init__(self, codec: str, limit: int):
        self.codec, self.limit, self.size, self.parts = codec, limit, 0, []

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise DecompressionBomb(f"{self.codec} data decompresses to more than {self.limit} bytes; stopped there")
        self.parts.append(chunk)

    def reserve(self, n: int) -> None:
        """A block that announces its size: refused before it is decompressed."""
        if self.size + n > self.limit:
            raise DecompressionBomb(
                f"{self.codec} data announces {self.size + n} bytes, more than {self.limit}; not decompressed"
            )

    def data(self) -> bytes:
        return b"".join(self.parts)

# --- codecs ----------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
def _fix_lz4_header_checksum(data: bytes) -> bytes:
    """KAFKA-3160: 0.8/0.9 wrote the frame header checksum over magic + descriptor."""
    if len(data) < 7:
        return data
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= end:
        return data
    hc = (xxhash.xxh32_intdigest(bytes(data[4:end])) >> 8) & 0xFF
    return bytes(data[:end]) + bytes([hc]) + bytes(data[end + 1 :])


def _gzip(data: bytes, limit: int) -> bytes:
    out = _Output("gzip", limit)
    data = bytes(data)
    while data:  # members, and the zero padding gzip.decompress skips too
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        rest = data
        while not d.eof:
            chunk = d.decompress(rest, CHUNK)
            rest = d.unconsumed_tail
            if not chunk and not rest:
                raise CorruptRecords("cannot decompress gzip: the stream is cut off")
            out.add(chunk)
        data = d.unused_data.lstrip(b"\x00")
    return out.data()


def _snappy_length(block: bytes) -> int:
    """The uncompressed length a snappy block starts with (uvarint)."""
    n = shift = 0
    for x in block[:5]:
        n |= (x & 0x7F) << shift
        if x < 0x80:
            return n
        shift += 7
    raise CorruptRecords("cannot decompress snappy: bad length preamble")


def _snappy(data: bytes, limit: int) -> bytes:
    import snappy

    out = _Output("snappy", limit)
    if data[:8] == _XERIAL_MAGIC and len(data) >= 16:
        pos = 16
        while pos < len(data):
            if pos + 4 > len(data):
                raise DecodeError("xerial snappy block length cut off")
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if n < 0 or pos + n > len(data):
                raise DecodeError(f"xerial snappy block of {n} bytes runs past the data")
            block = bytes(data[pos : pos + n])
            out.reserve(_snappy_length(block))
            out.add(snappy.uncompress(block))
            pos += n
        return out.data()
    block = bytes(data)
    out.reserve(_snappy_length(block))
    out.add(snappy.uncompress(block))
    return out.data()


def _lz4_frame(data: bytes, limit: int) -> bytes:
    import lz4.frame

    out = _Output("lz4", limit)
    d = lz4.frame.LZ4FrameDecompressor()
    out.add(d.decompress(data, max_length=CHUNK))
    while not d.eof:
        if d.needs_input:
            raise CorruptRecords("cannot decompress lz4: the frame is cut off")
        out.add(d.decompress(b"", max_length=CHUNK))
    return out.data()


def _lz4(data: bytes, magic: int, limit: int) -> bytes:
    if magic == 0:
        return _lz4_frame(_fix_lz4_header_checksum(data), limit)
    try:
        return _lz4_frame(bytes(data), limit)
    except RuntimeError:  # a 0.10 broker keeping a 0.9 producer's frame: old checksum
        return _lz4_frame(_fix_lz4_header_checksum(data), limit)


def _zstd(data: bytes, limit: int) -> bytes:
    import zstandard

    out = _Output("zstd", limit)
    with zstandard.ZstdDecompressor().stream_reader(bytes(data), read_across_frames=True) as reader:
        while chunk := reader.read(CHUNK):
            out.add(chunk)
    return out.data()


def decompress(codec: int, data: bytes, magic: int, limit: int | None = None) -> bytes:
    """Uncompressed bytes of a batch body / wrapper value, streamed and stopped past ``limit``
    bytes (default: :func:`decompression_limit` of an unknown count). Raises a DecodeError."""
    limit = decompression_limit(None) if limit is None else limit
    try:
        if codec == 1:
            return _gzip(data, limit)
        if codec == 2:
            return _snappy(data, limit)
        if codec == 3:
            return _lz4(data, magic, limit)
        if codec == 4 and magic == 2:
            return _zstd(data, limit)
    except DecodeError:
        raise
    except Exception as err:  # each library raises its own types
        raise CorruptRecords(f"cannot decompress {CODEC_NAMES[codec]}: {err}") from None
    raise UnsupportedCodec(f"unknown compression codec {codec} for magic {magic}")


# --- the segment walk ------------------------------------------------------------------------


def framing_error(row: np.ndarray, bounds: OffsetBounds = NO_BOUNDS) -> FramingError:
    """The typed error of a bad row of the batch table."""
    code, size, claimed, magic = (int(row[K.B_ERR]), int(row[K.B_SIZE]), int(row[K.B_CLAIMED_LEN]), int(row[K.B_MAGIC]))
    resume = f"skipped {size} bytes to the next valid batch"
    if code == K.E_TRUNCATED:
        if claimed < 0:
            return TruncatedBatch(f"batch cut off at end of file: {size} bytes, less than a batch header")
        return TruncatedBatch(f"batch cut off at end of file: claims {claimed} bytes, {size - 12} present")
    if code == K.E_UNKNOWN_MAGIC:
        return UnknownMagic(f"unknown magic {magic}; {resume}")
    if code == K.E_BAD_LENGTH:
        return ImpossibleLength(f"impossible batch length {claimed} for magic {magic}; {resume}")
    if code == K.E_LENGTH_EXCEEDS:
        return ImpossibleLength(f"batch length {claimed} runs past the end of the file; {resume}")
    if code == K.E_CRC:
        kind = "CRC-32C" if magic == 2 else "CRC-32"
        return CrcMismatch(f"{kind} mismatch in magic-{magic} batch of {claimed} bytes")
    first, last, count = int(row[K.B_BASE_OFFSET]), int(row[K.B_LAST_OFFSET]), int(row[K.B_COUNT])
    span = f"offsets {first}-{last}" if magic == 2 else f"offset {last}"
    if code == K.E_RECORD_COUNT:
        return RecordCountMismatch(f"magic-2 batch claims {count} records with lastOffsetDelta {last - first}")
    if code == K.E_OFFSET_RANGE:
        return OffsetOutOfRange(f"{span} outside the segment's range {bounds_text(bounds)}")
    if code == K.E_OFFSET_ORDER:
        return OffsetOutOfOrder(f"{span} do not follow the offsets of the batches around it")
    return FramingError(f"bad batch (code {code})")


def bounds_text(bounds: OffsetBounds) -> str:
    lo, hi, _ = bounds
    return f"[{lo}, {hi})" if hi != K.NO_OFFSET_LIMIT else f"[{lo}, ...)"


def records_error(code: int) -> DecodeError:
    """The typed error of a region whose records stop at error ``code`` (no record of it read)."""
    if code == K.E_NESTED:
        return CorruptRecords("compressed message inside a compressed wrapper")
    if code == K.E_INNER_CRC:
        return CorruptRecords("CRC-32 mismatch in a message inside a compressed wrapper")
    if code == K.E_OFFSET_DELTAS:
        return OffsetMismatch("record offsets do not increase up to the batch's last offset")
    if code == K.E_OFFSET_ORDER:
        return OffsetOutOfOrder("inner offsets of a compressed wrapper do not follow the batch before it")
    return CorruptRecords("records of a CRC-valid batch do not parse")


def partial_error(code: int, claimed: int, read: int, first: int | None, last: int | None,
                  left: int = 0) -> DecodeError:
    """The typed error of a magic-2 batch whose records were read up to error ``code``: the
    ``read`` records before it (offsets ``first``-``last``) are kept, the rest quarantined
    (``left``: bytes after the last record read)."""
    kept = f"{read} record(s) before it read (offsets {first}-{last})" if read else "no record before it"
    if code == K.E_RECORD_COUNT and left:
        return RecordCountMismatch(f"magic-2 batch claims {claimed} records; {left} bytes follow them; {kept}")
    if code == K.E_RECORD_COUNT:
        return RecordCountMismatch(f"magic-2 batch claims {claimed} records, its bytes hold {read}"
                                   + (f" (offsets {first}-{last}, read)" if read else ""))
    if code == K.E_OFFSET_DELTAS:
        return OffsetMismatch(f"a record's offset does not increase up to the batch's last offset; {kept}")
    return CorruptRecords(f"a record of a CRC-valid batch does not parse; {kept}")


@dataclass
class SegmentWalk:
    """Everything the byte walk found in one segment."""

    buf: np.ndarray  # the file bytes, followed by the decompressed blocks
    batches: np.ndarray  # batch table (B_* columns), good and bad rows
    records: np.ndarray  # record table (C_* columns)
    region_batch: np.ndarray  # batch row of each region
    bad: list[tuple[int, DecodeError, bytes]] = field(default_factory=list)  # (file pos, error, raw)
    file_size: int = 0

    @property
    def good_batches(self) -> int:
        return int((self.batches[:, K.B_ERR] == K.OK).sum()) if len(self.batches) else 0


def _raw(buf: np.ndarray, start: int, size: int) -> bytes:
    return buf[start : start + min(size, RAW_CAP)].tobytes()


def scan(buf: np.ndarray, check_crc: bool, bounds: OffsetBounds) -> np.ndarray:
    """The batch table of one segment (``kernels.scan_batches`` within ``bounds``)."""
    return native.kernels().scan_batches(buf, check_crc, K.CRC32C_TABLE, K.CRC32_TABLE, *bounds)


def walk_segment(buf: np.ndarray, check_crc: bool = True, bounds: OffsetBounds = NO_BOUNDS) -> SegmentWalk:
    """Frame, verify, decompress and walk the records of one segment's bytes."""
    file_size = len(buf)
    batches = scan(buf, check_crc, bounds)
    # a recordCount the batch's offsets cannot hold: its records are read all the same (the
    # walk reports how many are there and quarantines the claim)
    batches[batches[:, K.B_ERR] == K.E_RECORD_COUNT, K.B_ERR] = K.OK
    bad: list[tuple[int, DecodeError, bytes]] = []
    ok = batches[:, K.B_ERR] == K.OK
    for row in batches[~ok]:
        bad.append((int(row[K.B_POS]), framing_error(row, bounds), _raw(buf, int(row[K.B_POS]), int(row[K.B_SIZE]))))

    good = np.flatnonzero(ok)
    gb = batches[good]
    magic = gb[:, K.B_MAGIC]
    codec = gb[:, K.B_ATTRS] & ATTR_CODEC
    pos = gb[:, K.B_POS]
    end = pos + gb[:, K.B_SIZE]

    # Uncompressed batches: regions straight into the file bytes (vectorised).
    regions = np.zeros((len(gb), K.R_FIELDS), dtype=np.int64)
    regions[:, K.R_BATCH] = good
    regions[:, K.R_FILE_POS] = -1
    v2 = magic == 2
    regions[:, K.R_START] = np.where(v2, pos + V2_HEADER_SIZE, pos)
    regions[:, K.R_END] = end
    regions[:, K.R_KIND] = np.where(v2, K.KIND_V2, K.KIND_LEGACY_ABSOLUTE)
    regions[:, K.R_OFFSET] = gb[:, K.B_BASE_OFFSET]
    regions[:, K.R_LAST_OFFSET] = gb[:, K.B_LAST_OFFSET]
    regions[:, K.R_COUNT] = np.where(v2, gb[:, K.B_COUNT], -1)
    keep = np.ones(len(gb), dtype=bool)

    # Compressed batches: one library call each, the output appended after the file bytes.
    blobs: list[np.ndarray] = []
    cursor = len(buf)
    for i in np.flatnonzero(codec != 0):
        p, m = int(pos[i]), int(magic[i])
        try:
            if m == 2:
                body = buf[p + V2_HEADER_SIZE : int(end[i])]
            else:
                body = _legacy_value(buf, p, int(end[i]), m)
            limit = decompression_limit(int(gb[i, K.B_COUNT]) if m == 2 else None)
            data = decompress(int(codec[i]), memoryview(body), m, limit)
        except DecodeError as err:
            bad.append((p, err, _raw(buf, p, int(end[i]) - p)))
            keep[i] = False
            continue
        blob = np.frombuffer(data, dtype=np.uint8)
        blobs.append(blob)
        regions[i, K.R_START] = cursor
        regions[i, K.R_END] = cursor + len(blob)
        regions[i, K.R_FILE_POS] = p
        if m != 2:
            regions[i, K.R_KIND] = K.KIND_LEGACY_RELATIVE if m == 1 else K.KIND_LEGACY_ABSOLUTE
            regions[i, K.R_CHECK_CRC] = 1
        cursor += len(blob)
    regions = regions[keep]
    if blobs:
        buf = np.concatenate([buf, *blobs])

    records, errs, stops = native.kernels().walk_records(buf, regions, K.CRC32_TABLE)
    records = _wrapper_order(records, errs, regions, batches, bounds[0])
    for r in np.flatnonzero(errs):
        row = batches[regions[r, K.R_BATCH]]
        p = int(row[K.B_POS])
        if stops[r] < 0:  # nothing of the region read
            bad.append((p, records_error(int(errs[r])), _raw(buf, p, int(row[K.B_SIZE]))))
        else:
            bad.append(_partial(buf, records, regions, r, int(errs[r]), int(stops[r]), row))
    bad.sort(key=lambda x: x[0])
    return SegmentWalk(buf, batches, records, regions[:, K.R_BATCH].copy(), bad, file_size=file_size)


def _partial(buf: np.ndarray, records: np.ndarray, regions: np.ndarray, r: int, code: int, stop: int,
             row: np.ndarray) -> tuple[int, DecodeError, bytes]:
    """The quarantine entry of magic-2 region ``r``, read up to ``stop`` (records before it
    kept): (file position, error, raw). More records claimed than the bytes hold is the
    batch's fault (its header: position and raw); the bytes from ``stop`` on (a record that
    does not parse, bytes after the records claimed) are at their own position in the file
    (in a compressed batch: the batch's), raw up to the end of the records."""
    mine = records[records[:, K.C_REGION] == r, K.C_OFFSET]
    first, last = (int(mine[0]), int(mine[-1])) if len(mine) else (None, None)
    end = int(regions[r, K.R_END])
    err = partial_error(code, int(row[K.B_COUNT]), len(mine), first, last, end - stop)
    p = int(row[K.B_POS])
    if stop == end:
        return p, err, _raw(buf, p, V2_HEADER_SIZE)
    return (p if regions[r, K.R_FILE_POS] >= 0 else stop), err, _raw(buf, stop, end - stop)


def _wrapper_order(
    records: np.ndarray, errs: np.ndarray, regions: np.ndarray, batches: np.ndarray, lo: int
) -> np.ndarray:
    """A legacy compressed wrapper carries only its last offset, so ``check_offsets`` cannot
    see where it starts: once decompressed, its first inner offset must follow the last offset
    of the good batch before it (else errs = E_OFFSET_ORDER and its records are dropped)."""
    wrappers = np.flatnonzero((regions[:, K.R_FILE_POS] >= 0) & (regions[:, K.R_KIND] != K.KIND_V2) & (errs == 0))
    if not len(wrappers):
        return records
    good = np.flatnonzero(batches[:, K.B_ERR] == K.OK)
    drop = []
    for r in wrappers:
        row = regions[r, K.R_BATCH]
        before = good[good < row]
        prev_last = batches[before[-1], K.B_LAST_OFFSET] if len(before) else lo - 1
        mine = records[:, K.C_REGION] == r
        if mine.any() and records[mine, K.C_OFFSET].min() <= prev_last:
            errs[r] = K.E_OFFSET_ORDER
            drop.append(r)
    return records[~np.isin(records[:, K.C_REGION], drop)] if drop else records


def _legacy_value(buf: np.ndarray, pos: int, end: int, magic: int) -> np.ndarray:
    """The value bytes of a legacy wrapper message (its compressed inner message set)."""
    q = pos + 18 + (8 if magic == 1 else 0)
    klen = LEGACY_KV.unpack_from(buf, q)[0]
    q += 4 + max(klen, 0)
    if klen < -1 or q + 4 > end:
        raise CorruptRecords("wrapper message key runs past the message")
    vlen = LEGACY_KV.unpack_from(buf, q)[0]
    q += 4
    if vlen < 0 or q + vlen != end:
        raise CorruptRecords(f"wrapper message value length {vlen} does not fit the message")
    return buf[q : q + vlen]
