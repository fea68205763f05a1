"""numba kernels: the byte walks of a segment, filling numpy arrays (no per-record Python).

- :func:`scan_batches`  top-level framing of a segment file: one row per batch (magic 2) or
  top-level message (magic 0/1), CRC checked (slice-by-8 tables), corrupt regions reported
  with the position where decodable framing resumes (see ``batches.py`` for the grammar).
  Resync after a bad header is linear: a candidate position must pass the cheap header checks
  of :func:`_plausible` before its CRC is computed, once, within a CRC budget per file.
- :func:`check_offsets` the offsets that must hold between the batches of one segment.
- :func:`walk_records`  records of the regions the caller hands over: magic-2 record lists and
  legacy message sets (the inner set of a compressed wrapper, or one uncompressed message).
- :func:`decode_flat`   flat versioned structs (record keys, OffsetCommitValue) described by
  the op tables ``records.py`` compiles from its field tables.
- :func:`gather_strings` (pos, len) spans -> Arrow string buffers.
- :func:`dictionary_spans` (pos, len) spans -> dictionary indices + the distinct spans (the
  repeating group and topic columns go to Arrow and Parquet dictionary-encoded).

Error codes are plain ints (the kernels cannot raise typed errors); ``batches.py`` maps
them to the typed errors of ``errors.py``. They and the other constants live in
:mod:`pipelines.kafka.kernel_tables` (no numba import); callers reach the kernels through
:func:`pipelines.kafka.native.kernels`, the ahead-of-time build when it is current.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from pipelines.kafka.kernel_tables import (  # noqa: F401 - the kernels' constants, re-exported
    ATTR_MASK,
    B_ATTRS,
    B_BASE_OFFSET,
    B_BASE_TS,
    B_CLAIMED_LEN,
    B_COUNT,
    B_ERR,
    B_FIELDS,
    B_LAST_OFFSET,
    B_MAGIC,
    B_MAX_TS,
    B_POS,
    B_PRODUCER_EPOCH,
    B_PRODUCER_ID,
    B_SIZE,
    C_FIELDS,
    C_KEY_LEN,
    C_KEY_POS,
    C_OFFSET,
    C_REC_POS,
    C_REGION,
    C_VAL_LEN,
    C_VAL_POS,
    CRC32_TABLE,
    CRC32C_TABLE,
    E_BAD_LENGTH,
    E_BAD_STRING,
    E_BAD_TAG,
    E_CRC,
    E_INNER_CRC,
    E_LENGTH_EXCEEDS,
    E_NESTED,
    E_NULL,
    E_OFFSET_DELTAS,
    E_OFFSET_ORDER,
    E_OFFSET_RANGE,
    E_RECORD_COUNT,
    E_RECORDS,
    E_SHORT_TAIL,
    E_STRUCT_SHORT,
    E_TRUNCATED,
    E_UNKNOWN_MAGIC,
    E_UNKNOWN_VERSION,
    HEADER_PREFIX,
    KIND_LEGACY_ABSOLUTE,
    KIND_LEGACY_RELATIVE,
    KIND_V2,
    MAX_CODEC,
    MAX_RELATIVE_OFFSET,
    MIN_LENGTH,
    NO_OFFSET_LIMIT,
    OK,
    ORDER_WINDOW,
    R_BATCH,
    R_CHECK_CRC,
    R_COUNT,
    R_END,
    R_FIELDS,
    R_FILE_POS,
    R_KIND,
    R_LAST_OFFSET,
    R_OFFSET,
    R_START,
    RESYNC_CRC_SLACK,
    T_COMPACT_STRING,
    T_INT8,
    T_INT16,
    T_INT32,
    T_INT64,
    T_STRING,
    T_TAGGED,
    T_UUID,
)


@njit(cache=True, nogil=True, inline="always")
def _u32(b, p):
    return (np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16) | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3])


@njit(cache=True, nogil=True, inline="always")
def _i16(b, p):
    v = (np.int64(b[p]) << 8) | np.int64(b[p + 1])
    return v - 65536 if v >= 32768 else v


@njit(cache=True, nogil=True, inline="always")
def _i32(b, p):
    v = _u32(b, p)
    return v - 4294967296 if v >= 2147483648 else v


@njit(cache=True, nogil=True, inline="always")
def _i64(b, p):
    return (_u32(b, p) << 32) | _u32(b, p + 4)


@njit(cache=True, nogil=True)
def crc32_slice8(t, b, start, end):
    """CRC-32C (``CRC32C_TABLE``) or CRC-32 (``CRC32_TABLE``) of ``b[start:end]``, slice-by-8.

    Kept rather than ``crc32c.crc32c``/``zlib.crc32`` (``benchmarks/bench_kernels.py``; figures in
    docs/benchmarks.md): the framing needs a CRC inside the kernel (resync checks one per
    plausible candidate start, ``_resync_at``), and the library gains nothing in place: framing
    offset commits with this CRC takes as long as framing them by headers only and checking each
    batch's CRC-32C with ``crc32c.crc32c``. The library's CRC-32C alone is faster: move to it if
    the framing ever leaves numba."""
    c = np.int64(0xFFFFFFFF)
    i = start
    while i + 8 <= end:
        lo = c ^ (np.int64(b[i]) | (np.int64(b[i + 1]) << 8) | (np.int64(b[i + 2]) << 16) | (np.int64(b[i + 3]) << 24))
        hi = np.int64(b[i + 4]) | (np.int64(b[i + 5]) << 8) | (np.int64(b[i + 6]) << 16) | (np.int64(b[i + 7]) << 24)
        c = (
            t[7, lo & 0xFF]
            ^ t[6, (lo >> 8) & 0xFF]
            ^ t[5, (lo >> 16) & 0xFF]
            ^ t[4, (lo >> 24) & 0xFF]
            ^ t[3, hi & 0xFF]
            ^ t[2, (hi >> 8) & 0xFF]
            ^ t[1, (hi >> 16) & 0xFF]
            ^ t[0, (hi >> 24) & 0xFF]
        )
        i += 8
    while i < end:
        c = t[0, (c ^ np.int64(b[i])) & 0xFF] ^ (c >> 8)
        i += 1
    return c ^ np.int64(0xFFFFFFFF)


def _has_sse42() -> bool:
    """The CPU numba compiles for (the JIT's, and ``numba.pycc``'s: ``pipelines.aot`` builds
    for the host CPU) has the SSE 4.2 ``crc32`` instruction (every x86-64 CPU since 2008)."""
    import platform

    import llvmlite.binding as llvm

    return platform.machine().lower() in ("x86_64", "amd64") and bool(llvm.get_host_cpu_features().get("sse4.2"))


HW_CRC32C = _has_sse42()


@intrinsic
def _sse42_crc32_u64(typingctx, crc, word):
    """The SSE 4.2 ``crc32`` instruction on 8 bytes: the CRC-32C register after ``word``."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, i64]),
                                            "llvm.x86.sse42.crc32.64.64")
        return builder.call(fn, args)

    return types.uint64(types.uint64, types.uint64), codegen


@intrinsic
def _load_u64(typingctx, arr, idx):
    """The 8 bytes of the uint8 array ``arr`` at ``idx`` as one uint64 in the CPU's byte order
    (an unaligned load, which LLVM lowers for any target; little-endian on x86, where the CRC
    reads it)."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer())
        value = builder.load(ptr)
        value.align = 1
        return value

    return types.uint64(arr, types.int64), codegen


@njit(cache=True, nogil=True)
def _crc32c_sse42(t, b, start, end):
    """:func:`crc32_slice8` of ``CRC32C_TABLE`` by the SSE 4.2 instruction, 8 bytes a step:
    a fraction of the tables' time, where the CRC was a noticeable part of framing the segments
    of ``benchmarks/bench_offsets.py``."""
    c = np.uint64(0xFFFFFFFF)
    i = start
    while i + 8 <= end:
        c = _sse42_crc32_u64(c, _load_u64(b, i))
        i += 8
    r = np.int64(c)
    while i < end:
        r = t[0, (r ^ np.int64(b[i])) & 0xFF] ^ (r >> 8)
        i += 1
    return r ^ np.int64(0xFFFFFFFF)


# the CRC-32C of a magic-2 batch: the instruction where the CPU has it, else the tables
crc32c = _crc32c_sse42 if HW_CRC32C else crc32_slice8


@njit(cache=True, nogil=True)
def _check_batch(b, pos, n, check_crc, t32c, t32):
    """Status of the batch claimed to start at ``pos``: (code, claimed length)."""
    if n - pos < HEADER_PREFIX:
        return E_SHORT_TAIL, -1
    length = _i32(b, pos + 8)
    magic = np.int64(b[pos + 16])
    if magic > 2:
        return E_UNKNOWN_MAGIC, length
    if length < MIN_LENGTH[magic]:
        return E_BAD_LENGTH, length
    end = pos + 12 + length
    if end > n:
        return E_LENGTH_EXCEEDS, length
    if check_crc:
        if magic == 2:
            if crc32c(t32c, b, pos + 21, end) != _u32(b, pos + 17):
                return E_CRC, length
        else:
            if crc32_slice8(t32, b, pos + 16, end) != _u32(b, pos + 12):
                return E_CRC, length
    return OK, length


@njit(cache=True, nogil=True)
def _grow(a):
    out = np.zeros((a.shape[0] * 2, a.shape[1]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, nogil=True, inline="always")
def _plausible(b, q, n, lo, hi):
    """Cheap checks of a batch claimed to start at ``q`` (no CRC): true when its magic,
    length, attributes and offsets could be those of a batch of this segment, for magic 0/1
    also when its key and value lengths fill the message exactly."""
    if n - q < HEADER_PREFIX:
        return False
    base = _i64(b, q)
    magic = np.int64(b[q + 16])
    if base < lo or base >= hi or magic > 2:
        return False
    length = _i32(b, q + 8)
    end = q + 12 + length
    if length < MIN_LENGTH[magic] or end > n:
        return False
    if magic == 2:
        attrs = _i16(b, q + 21)
        delta = _i32(b, q + 23)
        count = _i32(b, q + 57)
        if attrs < 0 or attrs & ~ATTR_MASK[2] != 0 or (attrs & 7) > MAX_CODEC[2] or _i32(b, q + 12) < -1:
            return False
        if delta < 0 or base + delta >= hi or count < 0 or count > delta + 1:
            return False
        return (attrs & 7) != 0 or count * 7 <= length - 49
    attrs = np.int64(b[q + 17])
    if attrs & ~ATTR_MASK[magic] != 0 or (attrs & 7) > MAX_CODEC[magic]:
        return False
    p = q + 18 + (8 if magic == 1 else 0)
    klen = _i32(b, p)
    if klen < -1 or p + 8 + max(klen, 0) > end:
        return False
    p += 4 + max(klen, 0)
    vlen = _i32(b, p)
    return vlen >= -1 and p + 4 + max(vlen, 0) == end


@njit(cache=True, nogil=True)
def _resync_at(b, q, n, lo, hi, t32c, t32, budget):
    """Does a valid batch (or the end of file) start at ``q``? The CRC is computed only for a
    plausible candidate, and only while ``budget[0]`` (bytes of failed CRCs left) lasts."""
    if q == n:
        return True
    if not _plausible(b, q, n, lo, hi):
        return False
    length = _i32(b, q + 8)
    if budget[0] < length:
        return False
    code, _ = _check_batch(b, q, n, True, t32c, t32)
    if code != OK:
        budget[0] -= length
    return code == OK


@njit(cache=True, nogil=True)
def scan_batches(b, check_crc, t32c, t32, lo=0, hi=NO_OFFSET_LIMIT, newest=False):
    """Top-level framing of one segment. Returns the batch table (see B_* columns). Without
    ``check_crc`` a batch's CRC is checked only when no plausible header follows it.

    ``[lo, hi)`` is the segment's offset range (see :func:`check_offsets`). A bad batch gets
    one row with B_ERR set and B_SIZE = bytes up to where framing resumes: the claimed end if
    a valid batch (or EOF) is there, else the next position where a plausible, CRC-valid
    batch starts (resync), else the end of file. Resync is linear in the file size: cheap
    checks first, a CRC once per candidate that passes them, and failed CRCs limited to
    twice the file size (plus slack); past that the rest of the file is one bad region."""
    n = b.shape[0]
    out = np.zeros((256, B_FIELDS), dtype=np.int64)
    budget = np.array([2 * n + RESYNC_CRC_SLACK], dtype=np.int64)
    k = 0
    pos = 0
    while pos < n:
        if k >= out.shape[0]:
            out = _grow(out)
        code, length = _check_batch(b, pos, n, check_crc, t32c, t32)
        if code == OK and not check_crc:
            # headers only: a batch must end at the end of file or at a plausible header, or
            # pass its CRC (a damaged length would otherwise skip the batches after it)
            end = pos + 12 + length
            if end < n and not _plausible(b, end, n, lo, hi):
                code, length = _check_batch(b, pos, n, True, t32c, t32)
        row = out[k]
        row[B_POS] = pos
        row[B_CLAIMED_LEN] = length
        row[B_ERR] = code
        row[B_PRODUCER_ID] = -1
        row[B_PRODUCER_EPOCH] = -1
        row[B_MAX_TS] = -1
        row[B_BASE_TS] = -1
        if code == OK:
            size = 12 + length
            magic = np.int64(b[pos + 16])
            row[B_SIZE] = size
            row[B_MAGIC] = magic
            base = _i64(b, pos)
            row[B_BASE_OFFSET] = base
            if magic == 2:
                row[B_ATTRS] = _i16(b, pos + 21)
                row[B_LAST_OFFSET] = base + _i32(b, pos + 23)
                row[B_BASE_TS] = _i64(b, pos + 27)
                row[B_MAX_TS] = _i64(b, pos + 35)
                row[B_PRODUCER_ID] = _i64(b, pos + 43)
                row[B_PRODUCER_EPOCH] = _i16(b, pos + 51)
                row[B_COUNT] = _i32(b, pos + 57)
            else:
                row[B_ATTRS] = np.int64(b[pos + 17])
                row[B_LAST_OFFSET] = base
                row[B_COUNT] = 1
                if magic == 1:
                    row[B_MAX_TS] = _i64(b, pos + 18)
            k += 1
            pos += size
            continue
        row[B_MAGIC] = np.int64(b[pos + 16]) if n - pos > 16 else -1
        if code == E_SHORT_TAIL:
            row[B_ERR] = E_TRUNCATED
            row[B_SIZE] = n - pos
            k += 1
            break
        claimed_end = pos + 12 + length
        if (length >= 0 and claimed_end <= n and claimed_end > pos + HEADER_PREFIX
                and _resync_at(b, claimed_end, n, lo, hi, t32c, t32, budget)):
            row[B_SIZE] = claimed_end - pos
        else:
            q = pos + 1
            while q < n:
                # the cheapest filters inline (a call per byte costs more than they do): magic
                # 0-2, base offset in range, length within the file
                if q + HEADER_PREFIX <= n and b[q + 16] <= 2:
                    base = _i64(b, q)
                    claimed = _i32(b, q + 8)
                    if (lo <= base < hi and claimed >= 14 and q + 12 + claimed <= n
                            and _resync_at(b, q, n, lo, hi, t32c, t32, budget)):
                        break
                q += 1
            row[B_SIZE] = q - pos
            if q == n and code == E_LENGTH_EXCEEDS:
                row[B_ERR] = E_TRUNCATED
        pos += row[B_SIZE]
        k += 1
    out = out[:k]
    check_offsets(out, lo, hi, newest)
    return out


@njit(cache=True, nogil=True)
def check_offsets(bt, lo, hi, newest):
    """Mark the good rows of a batch table whose offsets cannot hold (B_ERR, in place).

    - range: ``lo <= baseOffset`` and ``lastOffset < hi`` (the segment's file-name base offset
      and the next segment's, capped at base + 2**31);
    - count: ``0 <= recordCount <= lastOffsetDelta + 1``, else E_RECORD_COUNT once the order is
      judged (its offsets take part in it: the records present are still read, by
      :func:`walk_records`, which says how many there are);
    - order: offsets strictly increase from batch to batch. Where they do not, the batches
      kept are those of the longest increasing chain (a chain may skip up to ORDER_WINDOW
      batches in a row), ties going to the chain with more contiguous neighbours
      (lastOffset + 1 = next baseOffset) and, in the ``newest`` segment (never compacted
      by Kafka, so it starts at its file name's offset), to a chain whose first batch starts
      at ``lo``; the others are E_OFFSET_ORDER.

    A legacy (magic 0/1) compressed wrapper carries only its last offset: its base is taken
    as unknown (any gap before it is contiguous)."""
    m = bt.shape[0]
    idx = np.empty(m, dtype=np.int64)
    miscounted = np.zeros(m, dtype=np.bool_)
    c = 0
    for r in range(m):
        row = bt[r]
        if row[B_ERR] != OK:
            continue
        first, last = row[B_BASE_OFFSET], row[B_LAST_OFFSET]
        if first < lo or last >= hi or last < first:
            row[B_ERR] = E_OFFSET_RANGE
        else:
            miscounted[r] = row[B_MAGIC] == 2 and (row[B_COUNT] < 0 or row[B_COUNT] > last - first + 1)
            idx[c] = r
            c += 1
    _order(bt, idx, c, lo, newest)
    for r in range(m):
        if miscounted[r] and bt[r, B_ERR] == OK:
            bt[r, B_ERR] = E_RECORD_COUNT


@njit(cache=True, nogil=True)
def _order(bt, idx, c, lo, newest):
    """The order check of :func:`check_offsets` over the ``c`` rows ``idx`` whose offsets are
    in range: the rows off the kept chain become E_OFFSET_ORDER."""
    # fast path: already in order (and the newest segment starts at its base)
    ordered = True
    for j in range(1, c):
        if bt[idx[j], B_BASE_OFFSET] <= bt[idx[j - 1], B_LAST_OFFSET] and not _unknown_base(bt[idx[j]]):
            ordered = False
            break
        if bt[idx[j], B_LAST_OFFSET] <= bt[idx[j - 1], B_LAST_OFFSET]:
            ordered = False
            break
    if ordered and (not newest or c == 0 or idx[0] != 0 or _unknown_base(bt[idx[0]])
                    or bt[idx[0], B_BASE_OFFSET] == lo):
        return
    # longest chain, O(c * ORDER_WINDOW): score = (batches, contiguous links)
    count = np.zeros(c, dtype=np.int64)
    links = np.zeros(c, dtype=np.int64)
    parent = np.full(c, -1, dtype=np.int64)
    for j in range(c):
        rj = bt[idx[j]]
        count[j] = 1
        links[j] = 0
        if newest and idx[j] == 0 and not _unknown_base(rj):
            if rj[B_BASE_OFFSET] == lo:
                links[j] = 1
            else:
                count[j] = 0  # cannot open the newest segment: only a chain through others keeps it
        for i in range(max(0, j - ORDER_WINDOW), j):
            ri = bt[idx[i]]
            if count[i] == 0:
                continue
            if ri[B_LAST_OFFSET] >= rj[B_LAST_OFFSET]:
                continue
            unknown = _unknown_base(rj)
            if not unknown and ri[B_LAST_OFFSET] >= rj[B_BASE_OFFSET]:
                continue
            link = 1 if idx[i] + 1 == idx[j] and (unknown or ri[B_LAST_OFFSET] + 1 == rj[B_BASE_OFFSET]) else 0
            ci, li = count[i] + 1, links[i] + link
            if ci > count[j] or (ci == count[j] and li > links[j]):
                count[j], links[j], parent[j] = ci, li, i
    best = -1
    for j in range(c):
        if count[j] > 0 and (best < 0 or count[j] > count[best]
                             or (count[j] == count[best] and links[j] > links[best])):
            best = j
    keep = np.zeros(c, dtype=np.bool_)
    while best >= 0:
        keep[best] = True
        best = parent[best]
    for j in range(c):
        if not keep[j]:
            bt[idx[j], B_ERR] = E_OFFSET_ORDER


@njit(cache=True, nogil=True, inline="always")
def _unknown_base(row):
    return row[B_MAGIC] < 2 and (row[B_ATTRS] & 7) != 0


@njit(cache=True, nogil=True, inline="always")
def _varint(b, p, end):
    """Zig-zag varint (up to 10 bytes) at p: (value, next p) or (0, -1) on overrun."""
    raw = np.int64(0)
    shift = 0
    while p < end and shift < 70:
        x = np.int64(b[p])
        p += 1
        raw |= (x & 0x7F) << shift
        if x < 128:
            return (raw >> 1) ^ -(raw & 1), p
        shift += 7
    return np.int64(0), -1


@njit(cache=True, nogil=True, inline="always")
def _uvarint(b, p, end):
    raw = np.int64(0)
    shift = 0
    while p < end and shift < 35:
        x = np.int64(b[p])
        p += 1
        raw |= (x & 0x7F) << shift
        if x < 128:
            return raw, p
        shift += 7
    return np.int64(0), -1


@njit(cache=True, nogil=True)
def _walk_v2(b, start, end, count, base_offset, last_delta, out, k, region, file_pos):
    """Records of one magic-2 batch, up to ``count`` of them and the end of its bytes. Returns
    (row count, error code, position where the walk stopped). The records before an error
    are kept (the batch's CRC vouches for its bytes): E_RECORDS at the first record that does
    not parse; E_OFFSET_DELTAS at the first record whose offset delta does not increase within
    ``[0, lastOffsetDelta]``; E_RECORD_COUNT at the end when the bytes end before ``count``
    records (a negative count: every record up to the end, then this error), or where bytes
    remain after ``count`` records (Kafka's reader refuses both)."""
    p = start
    prev_delta = np.int64(-1)
    n = 0
    while count < 0 or n < count:
        if p == end:
            return k, E_RECORD_COUNT, p
        at = p
        rec_len, p = _varint(b, p, end)
        if p < 0 or rec_len < 6 or p + rec_len > end:
            return k, E_RECORDS, at
        rec_pos = p
        rec_end = p + rec_len
        p += 1  # attributes
        _, p = _varint(b, p, rec_end)  # timestampDelta
        if p < 0:
            return k, E_RECORDS, at
        off_delta, p = _varint(b, p, rec_end)
        if p < 0:
            return k, E_RECORDS, at
        klen, p = _varint(b, p, rec_end)
        if p < 0 or klen < -1 or p + max(klen, 0) > rec_end:
            return k, E_RECORDS, at
        kpos = p
        p += max(klen, 0)
        vlen, p = _varint(b, p, rec_end)
        if p < 0 or vlen < -1 or p + max(vlen, 0) > rec_end:
            return k, E_RECORDS, at
        vpos = p
        p += max(vlen, 0)
        nh, p = _varint(b, p, rec_end)
        if p < 0 or nh < 0:
            return k, E_RECORDS, at
        for _h in range(nh):
            hk, p = _varint(b, p, rec_end)
            if p < 0 or hk < 0 or p + hk > rec_end:
                return k, E_RECORDS, at
            p += hk
            hv, p = _varint(b, p, rec_end)
            if p < 0 or hv < -1 or p + max(hv, 0) > rec_end:
                return k, E_RECORDS, at
            p += max(hv, 0)
        if p != rec_end:
            return k, E_RECORDS, at
        if off_delta <= prev_delta or off_delta > last_delta:
            return k, E_OFFSET_DELTAS, at
        prev_delta = off_delta
        n += 1
        out[C_REGION, k] = region
        out[C_OFFSET, k] = base_offset + off_delta
        out[C_KEY_POS, k] = kpos
        out[C_KEY_LEN, k] = klen
        out[C_VAL_POS, k] = vpos
        out[C_VAL_LEN, k] = vlen
        out[C_REC_POS, k] = file_pos if file_pos >= 0 else rec_pos
        k += 1
    if p != end:
        return k, E_RECORD_COUNT, p
    return k, OK, p


@njit(cache=True, nogil=True)
def _walk_legacy(b, start, end, relative, wrapper_offset, check_crc, t32, out, k, region, file_pos):
    """Messages of a legacy message set; returns the new row count or a negative error. Inner
    offsets must increase; absolute ones (magic 0) end at the wrapper's offset."""
    p = start
    k0 = k
    while p < end:
        if end - p < 12 + 14:
            return -E_RECORDS
        size = _i32(b, p + 8)
        magic = np.int64(b[p + 16])
        if magic > 1 or size < MIN_LENGTH[magic] or p + 12 + size > end:
            return -E_RECORDS
        mend = p + 12 + size
        if check_crc and crc32_slice8(t32, b, p + 16, mend) != _u32(b, p + 12):
            return -E_INNER_CRC
        if b[p + 17] & 7 != 0:
            return -E_NESTED
        q = p + 18 + (8 if magic == 1 else 0)
        klen = _i32(b, q)
        q += 4
        if klen < -1 or q + max(klen, 0) > mend:
            return -E_RECORDS
        kpos = q
        q += max(klen, 0)
        if q + 4 > mend:
            return -E_RECORDS
        vlen = _i32(b, q)
        q += 4
        if vlen < -1 or q + max(vlen, 0) != mend:
            return -E_RECORDS
        if k > k0 and _i64(b, p) <= out[C_OFFSET, k - 1]:
            return -E_OFFSET_DELTAS
        out[C_REGION, k] = region
        out[C_OFFSET, k] = _i64(b, p)
        out[C_KEY_POS, k] = kpos
        out[C_KEY_LEN, k] = klen
        out[C_VAL_POS, k] = q
        out[C_VAL_LEN, k] = vlen
        out[C_REC_POS, k] = file_pos if file_pos >= 0 else p
        k += 1
        p = mend
    if file_pos >= 0 and not relative and k > k0 and out[C_OFFSET, k - 1] != wrapper_offset:
        return -E_OFFSET_DELTAS
    if relative and k > k0:
        last = out[C_OFFSET, k - 1]
        for i in range(k0, k):
            out[C_OFFSET, i] = wrapper_offset - last + out[C_OFFSET, i]
    return k


@njit(cache=True, nogil=True)
def _walk_regions(b, regions, t32, need, r, out, k, errs, stops):
    """:func:`walk_records` from region ``r`` on, while the next region's rows fit in ``out``;
    returns (next region, row count). No array grows in this loop (numba keeps ``out`` in
    registers: 4x faster than growing it in place)."""
    while r < regions.shape[0]:
        reg = regions[r]
        if k + need[r] > out.shape[1]:
            return r, k
        if reg[R_KIND] == KIND_V2:
            last_delta = reg[R_LAST_OFFSET] - reg[R_OFFSET]
            k, code, stop = _walk_v2(b, reg[R_START], reg[R_END], reg[R_COUNT], reg[R_OFFSET], last_delta, out, k,
                                     r, reg[R_FILE_POS])
            if code != OK:
                errs[r] = code
                stops[r] = stop
        else:
            res = _walk_legacy(b, reg[R_START], reg[R_END], reg[R_KIND] == KIND_LEGACY_RELATIVE, reg[R_OFFSET],
                               reg[R_CHECK_CRC] != 0, t32, out, k, r, reg[R_FILE_POS])
            if res < 0:
                errs[r] = -res
            else:
                k = res
        r += 1
    return r, k


@njit(cache=True, nogil=True)
def walk_records(b, regions, t32):
    """Records of every region (R_* columns). Returns (records table [rows, C_FIELDS], its
    columns contiguous; error code per region; where the walk of each region with an error
    stopped, -1 for the others). A legacy region with an error contributes no rows; a
    magic-2 one keeps the records before its error (:func:`_walk_v2`), and its stop is the
    position in ``b`` of the first byte not read."""
    m = regions.shape[0]
    errs = np.zeros(m, dtype=np.int64)
    stops = np.full(m, -1, dtype=np.int64)
    need = np.zeros(m, dtype=np.int64)  # the most rows of each region
    total = 0
    for r in range(m):
        reg = regions[r]
        span = reg[R_END] - reg[R_START]
        bound = span // 7 + 1 if reg[R_KIND] == KIND_V2 else span // 26 + 1  # a record is 7 bytes or more
        count = reg[R_COUNT]
        need[r] = min(count, bound) if reg[R_KIND] == KIND_V2 and count >= 0 else bound
        total += need[r]
    # the declared counts, up to a row per 8 bytes of the file (a batch that lies about its
    # count is walked after the table grows). Filled column by column (out[C_*] contiguous) and
    # returned transposed: a column of the (rows, C_FIELDS) table is a contiguous array, no copy
    out = np.empty((C_FIELDS, max(16, min(total, b.shape[0] // 8))), dtype=np.int64)
    r, k = 0, 0
    while True:
        r, k = _walk_regions(b, regions, t32, need, r, out, k, errs, stops)
        if r == m:
            return out[:, :k].T, errs, stops
        grown = np.empty((C_FIELDS, out.shape[1] * 2), dtype=np.int64)
        grown[:, : out.shape[1]] = out
        out = grown


@njit(cache=True, nogil=True)
def decode_flat(b, pos, length, ops, nops, nints, nstrs):
    """Versioned flat structs: int16 version, then the fields of ``ops[version]``.

    ops[v, j] = (slot, type); nops[v] = field count, -1 for an unknown version. T_TAGGED reads
    the tagged-field section: its slot, when >= 0, is the string slot of a uuid under tag 0 (the
    other tags are skipped). Int and string slots are counted apart (``nints``, ``nstrs``: an
    OffsetCommitValue has 4 ints and 2 strings; one count for both tables cost the decode of the
    benchmark's 500,000 keys and values 0.025 s against 0.023, and 20 MB more to fault in).
    Returns (version, ints[n, nints], str_pos[n, nstrs], str_len[n, nstrs] (-1 null), err)."""
    n = pos.shape[0]
    version = np.full(n, -1, dtype=np.int64)
    # filled slot by slot (ints[slot] contiguous), returned transposed: [n, nslots] tables whose
    # columns are contiguous arrays (no copies when a caller takes a column)
    ints = np.zeros((nints, n), dtype=np.int64)
    spos = np.zeros((nstrs, n), dtype=np.int64)
    slen = np.full((nstrs, n), -1, dtype=np.int64)
    err = np.zeros(n, dtype=np.int64)
    nv = nops.shape[0]
    for i in range(n):
        if length[i] < 0:
            err[i] = E_NULL
            continue
        p = pos[i]
        end = p + length[i]
        if length[i] < 2:
            err[i] = E_STRUCT_SHORT
            continue
        v = _i16(b, p)
        version[i] = v
        p += 2
        if v < 0 or v >= nv or nops[v] < 0:
            err[i] = E_UNKNOWN_VERSION
            continue
        e = 0
        for j in range(nops[v]):
            slot = ops[v, j, 0]
            t = ops[v, j, 1]
            if t == T_INT8:
                if p + 1 > end:
                    e = E_STRUCT_SHORT
                    break
                x = np.int64(b[p])
                ints[slot, i] = x - 256 if x >= 128 else x
                p += 1
            elif t == T_INT16:
                if p + 2 > end:
                    e = E_STRUCT_SHORT
                    break
                ints[slot, i] = _i16(b, p)
                p += 2
            elif t == T_INT32:
                if p + 4 > end:
                    e = E_STRUCT_SHORT
                    break
                ints[slot, i] = _i32(b, p)
                p += 4
            elif t == T_INT64:
                if p + 8 > end:
                    e = E_STRUCT_SHORT
                    break
                ints[slot, i] = _i64(b, p)
                p += 8
            elif t == T_UUID:
                if p + 16 > end:
                    e = E_STRUCT_SHORT
                    break
                spos[slot, i] = p
                slen[slot, i] = 16
                p += 16
            elif t == T_STRING or t == T_COMPACT_STRING:
                if t == T_STRING:
                    if p + 2 > end:
                        e = E_STRUCT_SHORT
                        break
                    sl = _i16(b, p)
                    p += 2
                else:
                    u, p = _uvarint(b, p, end)
                    if p < 0:
                        e = E_BAD_STRING
                        break
                    sl = u - 1
                if sl < -1:
                    e = E_BAD_STRING
                    break
                if p + max(sl, 0) > end:
                    e = E_STRUCT_SHORT
                    break
                spos[slot, i] = p
                slen[slot, i] = sl
                p += max(sl, 0)
            elif t == T_TAGGED:
                cnt, p = _uvarint(b, p, end)
                if p < 0:
                    e = E_STRUCT_SHORT
                    break
                for _t in range(cnt):
                    tag, p = _uvarint(b, p, end)
                    if p < 0:
                        break
                    size, p = _uvarint(b, p, end)
                    if p < 0 or p + size > end:
                        p = -1
                        break
                    if tag == 0 and slot >= 0:
                        if size != 16:
                            e = E_BAD_TAG
                            break
                        spos[slot, i] = p
                        slen[slot, i] = 16
                    p += size
                if e != 0:
                    break
                if p < 0:
                    e = E_STRUCT_SHORT
                    break
        err[i] = e
    return version, ints.T, spos.T, slen.T, err


@njit(cache=True, nogil=True)
def gather_strings(b, pos, length):
    """Concatenate spans into Arrow string buffers: (offsets int64[n+1], data uint8)."""
    n = pos.shape[0]
    offsets = np.zeros(n + 1, dtype=np.int64)
    total = 0
    for i in range(n):
        if length[i] > 0:
            total += length[i]
        offsets[i + 1] = total
    data = np.empty(total, dtype=np.uint8)
    for i in range(n):
        ln = length[i]
        if ln > 0:
            o = offsets[i]
            s = pos[i]
            for j in range(ln):
                data[o + j] = b[s + j]
    return offsets, data


@njit(cache=True, nogil=True, inline="always")
def _span_hash(b, s, ln):
    """64-bit hash of ``b[s:s+ln]``: FNV-style over 8-byte words (:func:`_load_u64`), the last
    partial word assembled byte by byte, then murmur3's finalizer (the table masks the low bits).
    Words rather than the bytes in four lanes: faster on the benchmark's group names."""
    prime = np.uint64(1099511628211)
    h = np.uint64(14695981039346656037) ^ np.uint64(ln)
    j = 0
    while j + 8 <= ln:
        h = (h ^ _load_u64(b, s + j)) * prime
        j += 8
    if j < ln:
        w = np.uint64(0)
        k = np.uint64(0)
        while j < ln:
            w |= np.uint64(b[s + j]) << k
            j += 1
            k += np.uint64(8)
        h = (h ^ w) * prime
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    return h ^ (h >> np.uint64(33))


@njit(cache=True, nogil=True, inline="always")
def _same(b, p, d, q, ln):
    j = 0
    while j + 8 <= ln:
        if _load_u64(b, p + j) != _load_u64(d, q + j):
            return False
        j += 8
    while j < ln:
        if b[p + j] != d[q + j]:
            return False
        j += 1
    return True


@njit(cache=True, nogil=True)
def _dictionary_fill(b, pos, length, i, index, slots, uhash, offsets, data, m):
    """:func:`dictionary_spans` from span ``i`` on, while the table stays under half load and the
    distinct spans fit ``uhash``/``data``; returns (next span, distinct count). A loop without
    growing arrays: numba keeps their pointers in registers."""
    n = pos.shape[0]
    mask = np.uint64(slots.shape[0] - 1)
    while i < n:
        ln = length[i]
        if ln < 0:
            index[i] = -1
            i += 1
            continue
        s = pos[i]
        h = _span_hash(b, s, ln)
        k = h & mask
        while True:
            e = slots[k]
            if e < 0 or (uhash[e] == h and offsets[e + 1] - offsets[e] == ln and _same(b, s, data, offsets[e], ln)):
                break
            k = (k + np.uint64(1)) & mask
        if e < 0:
            end = offsets[m]
            if 2 * (m + 1) > slots.shape[0] or m == uhash.shape[0] or end + ln > data.shape[0]:
                return i, m
            data[end : end + ln] = b[s : s + ln]
            offsets[m + 1] = end + ln
            uhash[m] = h
            slots[k] = m
            e = m
            m += 1
        index[i] = e
        i += 1
    return i, m


@njit(cache=True, nogil=True)
def dictionary_spans(b, pos, length):
    """Dictionary-encode spans (length -1 = null) by their bytes: (index int32 per span, -1 for
    a null; the distinct spans in order of first use as Arrow string buffers: offsets int64[m+1],
    data uint8). An open-addressing hash table (:func:`_span_hash`) grown at half load; a span
    is compared with the dictionary's own copy (cache-resident), not with its first occurrence.

    Kept rather than :func:`gather_strings` + pyarrow's ``dictionary_encode``
    (``benchmarks/bench_kernels.py``: about 2.7x on group-name spans): one pass over the spans
    instead of a copy of every string and a hash pass over the copy."""
    n = pos.shape[0]
    index = np.empty(n, dtype=np.int32)
    slots = np.full(1024, -1, dtype=np.int64)
    uhash = np.empty(256, dtype=np.uint64)
    offsets = np.zeros(257, dtype=np.int64)
    data = np.empty(4096, dtype=np.uint8)
    i, m = 0, 0
    while True:
        i, m = _dictionary_fill(b, pos, length, i, index, slots, uhash, offsets, data, m)
        if i == n:
            break
        if 2 * (m + 1) > slots.shape[0]:  # rehash at twice the size
            slots = np.full(slots.shape[0] * 2, -1, dtype=np.int64)
            mask = np.uint64(slots.shape[0] - 1)
            for x in range(m):
                k = uhash[x] & mask
                while slots[k] >= 0:
                    k = (k + np.uint64(1)) & mask
                slots[k] = x
        if m == uhash.shape[0]:
            uhash = np.concatenate((uhash, np.empty(m, dtype=np.uint64)))
            offsets = np.concatenate((offsets, np.zeros(m, dtype=np.int64)))
        while offsets[m] + length[i] > data.shape[0]:
            data = np.concatenate((data, np.empty(data.shape[0], dtype=np.uint8)))
    return index, offsets[: m + 1].copy(), data[: offsets[m]].copy()
