"""Record-batch framing of a Kafka log segment and the codecs: bytes -> record spans.

Sources: Apache Kafka ``clients/src/main/java/org/apache/kafka/common/record/``
(``DefaultRecordBatch``, ``DefaultRecord``, ``LegacyRecord``, ``AbstractLegacyRecordBatch``,
``ControlRecordType``, ``KafkaLZ4BlockInputStream``), ``../shared/FORMATS.md`` section 1.

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
                   int32 compat, then [int32 length][snappy block]*; or plain snappy),
                   3 lz4 frame (magic 0: header checksum over magic+descriptor, KAFKA-3160),
                   4 zstd

The byte walks are the numba kernels of ``kernels.py``; this module drives them, decompresses
(one library call per compressed batch) and turns error codes into typed errors.
"""

from __future__ import annotations

import gzip
import struct
from dataclasses import dataclass, field

import numpy as np

from pipelines.kafka import kernels as K
from pipelines.kafka.errors import (
    CorruptRecords,
    CrcMismatch,
    DecodeError,
    FramingError,
    ImpossibleLength,
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

# --- codecs ----------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XXH_P1, _XXH_P2, _XXH_P3, _XXH_P4, _XXH_P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _xxh32_small(data: bytes, seed: int = 0) -> int:
    """XXH32 of a short input (< 16 bytes: an LZ4 frame descriptor)."""
    assert len(data) < 16
    h = (seed + _XXH_P5 + len(data)) & _M32
    i = 0
    while i + 4 <= len(data):
        h = (h + int.from_bytes(data[i : i + 4], "little") * _XXH_P3) & _M32
        h = (((h << 17) | (h >> 15)) & _M32) * _XXH_P4 & _M32
        i += 4
    while i < len(data):
        h = (h + data[i] * _XXH_P5) & _M32
        h = (((h << 11) | (h >> 21)) & _M32) * _XXH_P1 & _M32
        i += 1
    h ^= h >> 15
    h = (h * _XXH_P2) & _M32
    h ^= h >> 13
    h = (h * _XXH_P3) & _M32
    return h ^ (h >> 16)


def _fix_lz4_header_checksum(data: bytes) -> bytes:
    """KAFKA-3160: 0.8/0.9 wrote the frame header checksum over magic + descriptor."""
    if len(data) < 7:
        return data
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= end:
        return data
    hc = (_xxh32_small(bytes(data[4:end])) >> 8) & 0xFF
    return bytes(data[:end]) + bytes([hc]) + bytes(data[end + 1 :])


def _snappy(data: bytes) -> bytes:
    import snappy

    if data[:8] == _XERIAL_MAGIC and len(data) >= 16:
        out, pos = [], 16
        while pos < len(data):
            if pos + 4 > len(data):
                raise DecodeError("xerial snappy block length cut off")
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if n < 0 or pos + n > len(data):
                raise DecodeError(f"xerial snappy block of {n} bytes runs past the data")
            out.append(snappy.uncompress(bytes(data[pos : pos + n])))
            pos += n
        return b"".join(out)
    return snappy.uncompress(bytes(data))


def _lz4(data: bytes, magic: int) -> bytes:
    import lz4.frame

    if magic == 0:
        return lz4.frame.decompress(_fix_lz4_header_checksum(data))
    try:
        return lz4.frame.decompress(bytes(data))
    except RuntimeError:  # a 0.10 broker keeping a 0.9 producer's frame: old checksum
        return lz4.frame.decompress(_fix_lz4_header_checksum(data))


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdDecompressor().decompressobj().decompress(bytes(data))


def decompress(codec: int, data: bytes, magic: int) -> bytes:
    """Uncompressed bytes of a batch body / wrapper value. Raises a DecodeError."""
    try:
        if codec == 1:
            return gzip.decompress(bytes(data))
        if codec == 2:
            return _snappy(data)
        if codec == 3:
            return _lz4(data, magic)
        if codec == 4 and magic == 2:
            return _zstd(data)
    except DecodeError:
        raise
    except Exception as err:  # each library raises its own types
        raise CorruptRecords(f"cannot decompress {CODEC_NAMES[codec]}: {err}") from None
    raise UnsupportedCodec(f"unknown compression codec {codec} for magic {magic}")


# --- the segment walk ------------------------------------------------------------------------


def framing_error(row: np.ndarray) -> FramingError:
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
    return FramingError(f"bad batch (code {code})")


def records_error(code: int) -> DecodeError:
    if code == K.E_NESTED:
        return CorruptRecords("compressed message inside a compressed wrapper")
    if code == K.E_INNER_CRC:
        return CorruptRecords("CRC-32 mismatch in a message inside a compressed wrapper")
    return CorruptRecords("records of a CRC-valid batch do not parse")


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


def walk_segment(buf: np.ndarray, check_crc: bool = True) -> SegmentWalk:
    """Frame, verify, decompress and walk the records of one segment's bytes."""
    file_size = len(buf)
    batches = K.scan_batches(buf, check_crc, K.CRC32C_TABLE, K.CRC32_TABLE)
    bad: list[tuple[int, DecodeError, bytes]] = []
    ok = batches[:, K.B_ERR] == K.OK
    for row in batches[~ok]:
        bad.append((int(row[K.B_POS]), framing_error(row), _raw(buf, int(row[K.B_POS]), int(row[K.B_SIZE]))))

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
            data = decompress(int(codec[i]), memoryview(body), m)
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

    records, errs = K.walk_records(buf, regions, K.CRC32_TABLE)
    for r in np.flatnonzero(errs):
        row = batches[regions[r, K.R_BATCH]]
        p = int(row[K.B_POS])
        bad.append((p, records_error(int(errs[r])), _raw(buf, p, int(row[K.B_SIZE]))))
    bad.sort(key=lambda x: x[0])
    return SegmentWalk(buf, batches, records, regions[:, K.R_BATCH].copy(), bad, file_size=file_size)


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
