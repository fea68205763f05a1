"""Constants and lookup tables of the Kafka byte-walk kernels (:mod:`pipelines.kafka.kernels`),
importable without numba: the decoders read them, and call the kernels of whichever build
:mod:`pipelines.kafka.native` loads."""

from __future__ import annotations

import numpy as np

# --- error codes -----------------------------------------------------------------------------
OK = 0
E_SHORT_TAIL = 1  # fewer bytes than a batch header at end of file
E_UNKNOWN_MAGIC = 2
E_BAD_LENGTH = 3  # length below the minimum of its magic (or negative)
E_LENGTH_EXCEEDS = 4  # length runs past the end of the file
E_CRC = 5
E_TRUNCATED = 6  # a batch cut off at end of file (nothing decodable after it)
E_RECORDS = 7  # CRC-valid batch whose records do not parse
E_NESTED = 8  # legacy inner message compressed again
E_INNER_CRC = 9
E_STRUCT_SHORT = 10  # struct runs past its bytes
E_UNKNOWN_VERSION = 11
E_BAD_STRING = 12  # negative length below -1 / bad varint
E_NULL = 13
E_OFFSET_RANGE = 14  # base/last offset outside the segment's range, or lastOffsetDelta < recordCount - 1
E_OFFSET_ORDER = 15  # offsets not after those of the batches before it (no longest chain keeps it)
E_OFFSET_DELTAS = 16  # record offsets not increasing, or past the batch's last offset
E_BAD_TAG = 17  # a tagged field the op table reads (a uuid) of the wrong size
E_RECORD_COUNT = 18  # a magic-2 recordCount its offsets or bytes cannot hold (the records present are read)

# --- batch table columns (scan_batches) ------------------------------------------------------
B_POS, B_SIZE, B_MAGIC, B_BASE_OFFSET, B_LAST_OFFSET, B_ATTRS, B_PRODUCER_ID, B_PRODUCER_EPOCH = range(8)
B_COUNT, B_MAX_TS, B_ERR, B_CLAIMED_LEN, B_BASE_TS = range(8, 13)
B_FIELDS = 13

# --- region table columns (walk_records input) -----------------------------------------------
R_START, R_END, R_KIND, R_OFFSET, R_COUNT, R_BATCH, R_FILE_POS, R_CHECK_CRC, R_LAST_OFFSET = range(9)
R_FIELDS = 9
KIND_LEGACY_ABSOLUTE = 0  # magic-0 wrapper inner set, or one top-level uncompressed message
KIND_LEGACY_RELATIVE = 1  # magic-1 wrapper inner set: offsets 0..n-1 relative to the wrapper
KIND_V2 = 2  # magic-2 record list

# --- record table columns (walk_records output) ----------------------------------------------
C_REGION, C_OFFSET, C_KEY_POS, C_KEY_LEN, C_VAL_POS, C_VAL_LEN, C_REC_POS = range(7)
C_FIELDS = 7

# --- field types of decode_flat op tables ----------------------------------------------------
T_INT8, T_INT16, T_INT32, T_INT64, T_STRING, T_COMPACT_STRING, T_TAGGED, T_UUID = range(1, 9)

MIN_LENGTH = np.array([14, 22, 49], dtype=np.int64)  # bytes after the length field, per magic
HEADER_PREFIX = 17  # offset, length, and enough to reach the magic byte of any version
# Kafka keeps a segment's offsets within an int32 of its base offset (the index stores relative
# offsets: ``LogSegment.canConvertToRelativeOffset``), so ``[base, base + 2**31)`` bounds it.
MAX_RELATIVE_OFFSET = 2**31 - 1
NO_OFFSET_LIMIT = 2**63 - 1
# attribute bits a reader may meet: v2 bits 0-6 (codec, timestamp type, transactional, control,
# delete horizon); magic 1 bits 0-3; magic 0 bits 0-2
ATTR_MASK = np.array([0x07, 0x0F, 0x7F], dtype=np.int64)
MAX_CODEC = np.array([3, 3, 4], dtype=np.int64)
RESYNC_CRC_SLACK = 64 << 20  # bytes of failed-candidate CRCs allowed on top of 2x the file
ORDER_WINDOW = 16  # a chain of batches may skip at most this many suspect batches in a row


def _crc_tables(poly: int) -> np.ndarray:
    """Slice-by-8 tables of a reflected CRC-32 polynomial."""
    t = np.zeros((8, 256), dtype=np.int64)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t[0, i] = c
    for i in range(256):
        c = int(t[0, i])
        for k in range(1, 8):
            c = int(t[0, c & 0xFF]) ^ (c >> 8)
            t[k, i] = c
    return t


CRC32C_TABLE = _crc_tables(0x82F63B78)  # Castagnoli: magic 2
CRC32_TABLE = _crc_tables(0xEDB88320)  # IEEE (zlib): magic 0/1
