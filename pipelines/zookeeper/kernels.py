"""Numba kernels of the snapshot hot path: the node-record walk, the tree digest and the
gathering of paths/data into Arrow buffers, the path sort. No Python object per node. And
the framing walk of a transaction log (:func:`walk_log`; grammar in
:mod:`pipelines.zookeeper.txnlog`), so that the txns a replay skips cost no Python.
Callers get them through :func:`pipelines.zookeeper.native.kernels` (an ahead-of-time
build of this module when one is installed and current, else numba's cached JIT).

Node record (``DataTree.serializeNodeData`` / ``DataNode.serialize``, jute, big-endian)::

    node        := ustring path , buffer data , long acl , StatPersisted
    StatPersisted := long czxid , long mzxid , long ctime , long mtime ,
                     int version , int cversion , int aversion ,
                     long ephemeralOwner , long pzxid                     (60 bytes)
    nodes       := node* , ustring "/"                                    (end marker)

Node digest (``DigestCalculator.calculateDigest``, 3.6+): CRC-32 of the path bytes (root is
""), the data bytes (if not null) and the stat re-ordered as czxid, mzxid, pzxid, ctime,
mtime (longs), version, cversion, aversion (ints), ephemeralOwner (long); 0 for paths under
``/zookeeper/``. The tree digest is the sum of node digests modulo 2**64.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from pipelines.zookeeper.kernel_tables import (  # noqa: F401 - the kernels' constants, re-exported
    CONTAINER_OWNER,
    CRC_TABLE,
    CRC_TABLES8,
    END_OF_RECORD,
    F_ACLS,
    F_BOOL,
    F_BUFFER,
    F_END,
    F_INT,
    F_LONG,
    F_MULTI,
    F_OPTIONAL,
    F_PATHS,
    F_UNKNOWN,
    KIND_MASK,
    LOG_FRAME_SIZE,
    MAX_REASONABLE,
    MIN_NODE,
    NULL_PATH,
    OK,
    SMALL_SORT,
    STAT_SIZE,
    STATUS_REASON,
    TRUNCATED,
    TXN_DIGEST_SIZE,
    TXN_HEADER_SIZE,
    TYPE_AT,
    UNREASONABLE,
    ZK_PREFIX,
    ZXID_AT,
)


@njit(cache=True, nogil=True, inline="always")
def _i32(b, p):
    # unsigned positions: no negative-index wraparound checks, so LLVM combines the byte
    # loads into one load and a byte swap (several times faster; same in _le32, gather, _key8)
    q = np.uint64(p)
    v = np.uint32(0)
    for k in range(4):
        v = (v << np.uint32(8)) | np.uint32(b[q + np.uint64(k)])
    return np.int64(np.int32(v))


@njit(cache=True, nogil=True, inline="always")
def _i64(b, p):
    q = np.uint64(p)
    v = np.uint64(0)
    for k in range(8):
        v = (v << np.uint64(8)) | np.uint64(b[q + np.uint64(k)])
    return np.int64(v)


@njit(cache=True, nogil=True)
def _crc_update(crc, b, start, n, table):
    c = crc
    for k in range(start, start + n):
        c = table[(c ^ np.uint32(b[k])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return c


@njit(cache=True, nogil=True, inline="always")
def _le32(b, q):
    """The little-endian uint32 at unsigned position ``q`` (one load)."""
    v = np.uint32(0)
    for k in range(3, -1, -1):
        v = (v << np.uint32(8)) | np.uint32(b[q + np.uint64(k)])
    return v


@njit(cache=True, nogil=True)
def _crc_update8(crc, b, start, n, t):
    """:func:`_crc_update` eight bytes at a time, then four (``t`` = :data:`CRC_TABLES8`).

    Kept rather than ``zlib.crc32`` (``benchmarks/bench_kernels.py``): a node's digest is six CRC
    updates of a few dozen bytes each, so the library costs a Python call per piece: the digests
    with ``zlib.crc32`` per node take several times as long as the whole :func:`walk_nodes`."""
    c = crc
    p = np.uint64(start)
    end = p + np.uint64(n)
    m = np.uint32(0xFF)
    while p + np.uint64(8) <= end:
        one = c ^ _le32(b, p)
        two = _le32(b, p + np.uint64(4))
        c = (t[7, one & m] ^ t[6, (one >> np.uint32(8)) & m] ^ t[5, (one >> np.uint32(16)) & m]
             ^ t[4, one >> np.uint32(24)] ^ t[3, two & m] ^ t[2, (two >> np.uint32(8)) & m]
             ^ t[1, (two >> np.uint32(16)) & m] ^ t[0, two >> np.uint32(24)])
        p += np.uint64(8)
    if p + np.uint64(4) <= end:  # four more at once: short strings often have a long tail
        one = c ^ _le32(b, p)
        c = (t[3, one & m] ^ t[2, (one >> np.uint32(8)) & m] ^ t[1, (one >> np.uint32(16)) & m]
             ^ t[0, one >> np.uint32(24)])
        p += np.uint64(4)
    while p < end:
        c = t[0, (c ^ np.uint32(b[p])) & m] ^ (c >> np.uint32(8))
        p += np.uint64(1)
    return c


@njit(cache=True, nogil=True)
def _check_len(b, p, n_total, allow_null):
    """(status, length) of the length-prefixed item at p."""
    if p + 4 > n_total:
        return TRUNCATED, 0
    ln = _i32(b, p)
    if ln < -1 or (ln == -1 and not allow_null):
        return (UNREASONABLE if ln < -1 else NULL_PATH), ln
    if ln > 0 and p + 4 + ln > n_total:
        return (UNREASONABLE if ln > MAX_REASONABLE else TRUNCATED), ln
    return OK, ln


@njit(cache=True, nogil=True)
def locate_nodes(b, pos, cols):
    """Hop over the node records from ``pos``, checking each length, and note where their
    parts are in the rows of ``cols``: path offsets, path lengths, data offsets, data lengths
    and stat offsets of record i in ``cols[:, i]``. Returns (status, error position, node
    count, position after the end marker, bad length). ``cols`` holds as many records as
    the bytes could (:func:`locate_capacity`; allocated by the caller: numpy maps arrays this
    big with huge pages, a kernel's allocation faults in every 4 KB page: ~10 ms of 1M
    znodes). The stat fields are decoded later, only where needed (:func:`decode_stats`)."""
    n_total = b.shape[0]
    p = pos
    count = 0
    while True:
        st, ln = _check_len(b, p, n_total, False)
        if st != OK:
            return st, p, count, p, ln
        if ln == 1 and b[p + 4] == 47:  # "/": end of nodes
            return OK, p, count, p + 5, 0
        q = p + 4 + ln
        st, dl = _check_len(b, q, n_total, True)
        if st != OK:
            return st, q, count, p, dl
        d = q + 4
        q = d + (dl if dl > 0 else 0)
        if q + 8 + STAT_SIZE > n_total:
            return TRUNCATED, q, count, p, 0
        cols[0, count] = p + 4
        cols[1, count] = ln
        cols[2, count] = d
        cols[3, count] = dl
        cols[4, count] = q + 8  # after the acl id
        p = q + 8 + STAT_SIZE
        count += 1


@njit(cache=True, nogil=True)
def locate_capacity(n_bytes, pos):
    """Node records that bytes ``pos:n_bytes`` can hold (:data:`MIN_NODE` bytes each), + 1."""
    return max(n_bytes - pos, 0) // MIN_NODE + 1


@njit(cache=True, nogil=True)
def walk_nodes(b, pos, table, zk_prefix):
    """:func:`locate_nodes` and :func:`node_digests` of every record in one call (for
    benchmarks and tests; the reader digests on two threads): (status tuple, path offsets,
    path lengths, data offsets, data lengths, stat offsets, digests), arrays of the records
    only."""
    cols = np.empty((5, locate_capacity(b.shape[0], pos)), np.int64)
    status = locate_nodes(b, pos, cols)
    n = status[2]
    path_off, path_len = cols[0, :n].copy(), cols[1, :n].copy()
    data_off, data_len, stat_off = cols[2, :n].copy(), cols[3, :n].copy(), cols[4, :n].copy()
    digest = np.zeros(n, np.uint32)
    node_digests(b, path_off, path_len, data_off, data_len, stat_off, table, zk_prefix, 0, n, digest)
    return status, path_off, path_len, data_off, data_len, stat_off, digest


@njit(cache=True, nogil=True)
def node_digests(b, path_off, path_len, data_off, data_len, stat_off, table, zk_prefix, lo, hi, digest):
    """The digests of nodes ``lo:hi`` (located by :func:`locate_nodes`) into ``digest``
    (``table`` = :data:`CRC_TABLES8`); 0 for nodes under ``/zookeeper/``. Releases the GIL:
    two threads digest the two halves of a snapshot (``snapshot.parse``)."""
    np_ = zk_prefix.shape[0]
    for i in range(lo, hi):
        ln = path_len[i]
        # node digest, unless under /zookeeper/
        system = ln >= np_
        if system:
            for k in range(np_):
                if b[path_off[i] + k] != zk_prefix[k]:
                    system = False
                    break
        if system:
            digest[i] = 0
            continue
        s = stat_off[i]
        dl = data_len[i]
        # the stat in digest order, straight from the record: czxid, mzxid (s+0..16), pzxid
        # (s+52..60), ctime, mtime (s+16..32), version, cversion, aversion (s+32..44), owner
        c = np.uint32(0xFFFFFFFF)
        c = _crc_update8(c, b, path_off[i], ln, table)
        if dl > 0:
            c = _crc_update8(c, b, data_off[i], dl, table)
        c = _crc_update8(c, b, s, 16, table)
        c = _crc_update8(c, b, s + 52, 8, table)
        c = _crc_update8(c, b, s + 16, 28, table)
        c = _crc_update8(c, b, s + 44, 8, table)
        digest[i] = c ^ np.uint32(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def take_spans(values, starts, lengths, order):
    """Spans ``order`` (string i is ``values[starts[i] : starts[i] + lengths[i]]``, null when
    ``lengths[i]`` is negative) as the buffers of an Arrow (large) binary array: (offsets,
    values, null count). One pass for the offsets, one copying the bytes."""
    m = order.shape[0]
    offsets = np.empty(m + 1, np.int64)
    offsets[0] = 0
    total = 0
    nulls = 0
    for j in range(m):
        n = lengths[order[j]]
        if n > 0:
            total += n
        elif n < 0:
            nulls += 1
        offsets[j + 1] = total
    out = np.empty(total, np.uint8)
    for j in range(m):
        r = np.uint64(order[j])
        n = lengths[r]
        if n <= 0:
            continue
        o = np.uint64(offsets[j])
        s = np.uint64(starts[r])
        for k in range(np.uint64(n)):  # unsigned: no wraparound checks, see _i32
            out[o + k] = values[s + k]
    return offsets, out, nulls


@njit(cache=True, nogil=True)
def decode_stats(b, offsets, order):
    """The StatPersisted records at ``offsets[order]`` (see the grammar above) as columns:
    (longs: czxid, mzxid, ctime, mtime, ephemeralOwner, pzxid; ints: version, cversion,
    aversion), one row per field."""
    m = order.shape[0]
    longs = np.empty((6, m), np.int64)
    ints = np.empty((3, m), np.int32)
    for j in range(m):
        s = offsets[order[j]]
        longs[0, j] = _i64(b, s)
        longs[1, j] = _i64(b, s + 8)
        longs[2, j] = _i64(b, s + 16)
        longs[3, j] = _i64(b, s + 24)
        ints[0, j] = _i32(b, s + 32)
        ints[1, j] = _i32(b, s + 36)
        ints[2, j] = _i32(b, s + 40)
        longs[4, j] = _i64(b, s + 44)
        longs[5, j] = _i64(b, s + 52)
    return longs, ints


@njit(cache=True, nogil=True)
def client_stats(longs, ints, children, data_lengths, order):
    """What a client sees (``DataNode.copyStat``, see :mod:`pipelines.zookeeper.rows`) of the
    persisted stats of rows ``order``, already taken in that order as :func:`decode_stats`
    returns them: ephemeralOwner (``longs[4]``) set to 0 in place for containers
    (Long.MIN_VALUE) and TTL nodes (high byte 0xFF); returns (cversion = 2 * persisted
    cversion - numChildren, dataLength (0 for null data), numChildren) as int32 rows.
    ``children`` and ``data_lengths`` are per node, indexed by ``order``."""
    m = order.shape[0]
    out = np.empty((3, m), np.int32)
    for j in range(m):
        r = order[j]
        owner = longs[4, j]
        if owner == CONTAINER_OWNER or (owner >> np.int64(56)) == -1:
            longs[4, j] = 0
        ch = np.int64(children[r])
        out[0, j] = np.int32(2 * np.int64(ints[1, j]) - ch)
        d = data_lengths[r]
        out[1, j] = np.int32(d if d > 0 else 0)
        out[2, j] = np.int32(ch)
    return out


@njit(cache=True, nogil=True)
def tree_digest(digests, alive):
    total = np.uint64(0)
    for i in range(digests.shape[0]):
        if alive[i]:
            total += np.uint64(digests[i])
    return np.int64(total)


@njit(cache=True, nogil=True)
def parent_lengths(values, starts, lengths, out):
    """Byte length of each path's parent (up to its last '/') into ``out``; -1 for the root
    (""). Strings here are spans: string i is ``values[starts[i] : starts[i] + lengths[i]]``.
    (Arrays of one value per node come from the caller: see :func:`locate_nodes`.)"""
    n = starts.shape[0]
    for i in range(n):
        s = starts[i]
        e = s + lengths[i]
        k = e - 1
        while k >= s and values[k] != 47:
            k -= 1
        out[i] = k - s if k >= s else -1


@njit(cache=True, nogil=True)
def preorder_parents(values, starts, lengths, plen, parents):
    """Parent row of each node into ``parents`` (-1: the root) when rows are in the
    snapshot's pre-order (parents before children, each subtree contiguous): the parent is
    on the stack of open ancestors. Returns False (``parents`` unfinished) when the order is
    not a pre-order."""
    n = starts.shape[0]
    stack = np.empty(n + 1, np.int64)
    depth = 0
    for i in range(n):
        want = plen[i]
        if want < 0:  # the root
            parents[i] = -1
            depth = 0
            stack[0] = i
            depth = 1
            continue
        found = -1
        while depth > 0:
            top = stack[depth - 1]
            if lengths[top] == want:
                same = True
                a, b = starts[top], starts[i]
                for k in range(want):
                    if values[a + k] != values[b + k]:
                        same = False
                        break
                if same:
                    found = top
                    break
            depth -= 1
        if found < 0:
            return False
        parents[i] = found
        stack[depth] = i
        depth += 1
    return True


@njit(cache=True, nogil=True, inline="always")
def _key8(values, start, end, at):
    """Bytes [at, at+8) of the string values[start:end], big-endian, zero-padded (ZooKeeper
    paths hold no NUL, so padding sorts a shorter string first, as a byte compare does)."""
    n = min(end - start - at, 8)
    if n <= 0:
        return np.uint64(0)
    q = np.uint64(start + at)  # unsigned: see _i32
    k = np.uint64(0)
    for j in range(np.uint64(n)):
        k = (k << np.uint64(8)) | np.uint64(values[q + j])
    return k << np.uint64(8 * (8 - n))


@njit(cache=True, nogil=True)
def sort_strings(values, starts, lengths, rows):
    """The order of strings ``rows`` (row numbers of the spans, see :func:`parent_lengths`)
    by their bytes (:func:`sort_strings_until` in one go)."""
    n = rows.shape[0]
    order = rows.copy()
    sort_strings_until(values, starts, lengths, order, np.empty(n, np.uint64), np.empty(n, np.int64),
                       np.empty(n, np.uint64), sort_stack(n), 1 if n > 1 else 0, n)
    return order


@njit(cache=True, nogil=True)
def sort_stack(n):
    """The group stack of :func:`sort_strings_until` for ``n`` strings, holding the whole
    range: rows (lo, hi, byte position), height 1 (0 when n < 2: nothing to sort). Pending
    groups are disjoint and of 2+ strings, so n // 2 + 1 rows always suffice."""
    stack = np.empty((n // 2 + 1, 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, n, 0
    return stack


@njit(cache=True, nogil=True)
def sort_strings_until(values, starts, lengths, order, keys, spare_order, spare_keys, stack, top, until):
    """Sort ``order`` (row numbers of the spans) by the strings' bytes until its
    first ``until`` positions are final; returns the new stack height (0: all sorted).

    Most-significant-digit first, 8 bytes per digit (:func:`_key8`): a group of strings
    equal so far gets the next 8 bytes of each as keys, is sorted by them
    (:func:`_radix_sort`, :func:`_insertion_sort` when small), and each run of equal keys
    becomes a group one digit deeper; a group whose 8 bytes are all equal (long shared
    prefixes like /brokers/topics/) goes deeper without sorting. Groups wait on ``stack`` (see :func:`sort_stack`), the
    leftmost on top, so everything left of the top group is final: the sort can stop
    there and resume (``keys``, ``spare_*``: scratch as long as ``order``).

    Kept rather than ``pyarrow.compute.sort_indices`` or ``numpy.argsort``
    (``benchmarks/bench_kernels.py``): faster than both on ZooKeeper paths, and neither can stop
    part way, which the writer uses to write the first batches while the rest is sorted
    (:class:`~pipelines.zookeeper.rows.PathSort`)."""
    counts = np.empty((8, 256), np.int64)
    while top > 0 and stack[top - 1, 0] < until:
        top -= 1
        lo, hi, at = stack[top, 0], stack[top, 1], stack[top, 2]
        longer = False
        for i in range(lo, hi):
            r = np.uint64(order[i])
            s, n = starts[r], lengths[r]
            keys[i] = _key8(values, s, s + n, at)
            if n > at + 8:
                longer = True
        same = True
        for i in range(lo + 1, hi):
            if keys[i] != keys[lo]:
                same = False
                break
        if same:
            if longer:
                stack[top, 0], stack[top, 1], stack[top, 2] = lo, hi, at + 8
                top += 1
            continue
        if hi - lo <= SMALL_SORT:
            _insertion_sort(keys, order, lo, hi)
        else:
            _radix_sort(keys, order, lo, hi, spare_keys, spare_order, counts)
        # runs of equal keys with a longer string go one digit deeper: pushed last first
        j = hi
        while j > lo:
            i = j - 1
            while i > lo and keys[i - 1] == keys[j - 1]:
                i -= 1
            if j - i > 1:
                for t in range(i, j):
                    if lengths[order[t]] > at + 8:
                        stack[top, 0], stack[top, 1], stack[top, 2] = i, j, at + 8
                        top += 1
                        break
            j = i
    return top


@njit(cache=True, nogil=True)
def _insertion_sort(keys, order, lo, hi):
    """:func:`_radix_sort` for a few keys."""
    for i in range(lo + 1, hi):
        k, r = keys[i], order[i]
        j = i
        while j > lo and keys[j - 1] > k:
            keys[j], order[j] = keys[j - 1], order[j - 1]
            j -= 1
        keys[j], order[j] = k, r


@njit(cache=True, nogil=True)
def _radix_sort(keys, order, lo, hi, spare_keys, spare_order, counts):
    """Sort keys[lo:hi], carrying order[lo:hi] along: least-significant-digit radix sort,
    a byte per pass, skipping the bytes all keys share (``counts``: 8 x 256 scratch)."""
    counts[:, :] = 0
    for i in range(lo, hi):
        k = keys[i]
        for d in range(8):
            counts[d, (k >> np.uint64(8 * d)) & np.uint64(0xFF)] += 1
    n = hi - lo
    moved = False  # the sorted run is in spare_*
    for d in range(8):
        shift = np.uint64(8 * d)
        c = counts[d]
        if c[(keys[lo] >> shift) & np.uint64(0xFF)] == n:
            continue
        total = lo
        for b in range(256):
            m = c[b]
            c[b] = total
            total += m
        src_k, src_o, dst_k, dst_o = keys, order, spare_keys, spare_order
        if moved:
            src_k, src_o, dst_k, dst_o = spare_keys, spare_order, keys, order
        for i in range(lo, hi):
            k = src_k[i]
            b = (k >> shift) & np.uint64(0xFF)
            p = c[b]
            c[b] = p + 1
            dst_k[p] = k
            dst_o[p] = src_o[i]
        moved = not moved
    if moved:
        keys[lo:hi] = spare_keys[lo:hi]
        order[lo:hi] = spare_order[lo:hi]


@njit(cache=True, nogil=True)
def subtree_mask(values, starts, lengths, prefix):
    """Which strings (spans) are ``prefix`` or start with ``prefix`` + "/"."""
    n = starts.shape[0]
    m = prefix.shape[0]
    out = np.zeros(n, np.bool_)
    for i in range(n):
        s = starts[i]
        e = s + lengths[i]
        if e - s < m:
            continue
        same = True
        for k in range(m):
            if values[s + k] != prefix[k]:
                same = False
                break
        if same and (e - s == m or values[s + m] == 47):
            out[i] = True
    return out


# --- transaction logs (grammar: pipelines.zookeeper.txnlog) ---------------------------------


@njit(cache=True, nogil=True)
def _adler32(b, start, n):
    """``zlib.adler32`` of ``b[start : start + n]``."""
    s1 = np.uint64(1)
    s2 = np.uint64(0)
    p = np.uint64(start)
    end = p + np.uint64(n)
    while p < end:
        stop = min(end, p + np.uint64(1 << 20))  # the sums stay below 2**64 over 1 MiB
        while p < stop:
            s1 += np.uint64(b[p])
            s2 += s1
            p += np.uint64(1)
        s1 %= np.uint64(65521)
        s2 %= np.uint64(65521)
    return np.int64((s2 << np.uint64(16)) | s1)


@njit(cache=True, nogil=True)
def _scalar_end(b, p, end, kind):
    """The position after the int, long, bool or buffer (ustring) at ``p`` of a record ending
    at ``end``, or -1 where ``jute.Reader`` fails: a truncation or a length below -1."""
    if kind == F_INT:
        return p + 4 if p + 4 <= end else -1
    if kind == F_LONG:
        return p + 8 if p + 8 <= end else -1
    if kind == F_BOOL:
        return p + 1 if p + 1 <= end else -1
    if p + 4 > end:
        return -1
    n = _i32(b, p)
    p += 4
    if n < -1 or n > end - p:
        return -1
    return p + max(n, 0)


@njit(cache=True, nogil=True)
def _field_end(b, p, end, kind):
    """:func:`_scalar_end`, and for a vector of ACLs or paths (null: -1) its items."""
    if kind != F_ACLS and kind != F_PATHS:
        return _scalar_end(b, p, end, kind)
    if p + 4 > end:
        return -1
    n = _i32(b, p)
    p += 4
    if n < -1:
        return -1
    for _ in range(n):  # each item needs 4 bytes at least: a bad count ends in a truncation
        if kind == F_ACLS:
            p = _scalar_end(b, p, end, F_INT)
            if p >= 0:
                p = _scalar_end(b, p, end, F_BUFFER)
        if p >= 0:
            p = _scalar_end(b, p, end, F_BUFFER)
        if p < 0:
            return -1
    return p


@njit(cache=True, nogil=True)
def _type_row(kinds, type_base, type_):
    row = type_ - type_base
    if row < 0 or row >= kinds.shape[0] or kinds[row, 0] == F_UNKNOWN:
        return -1
    return row


@njit(cache=True, nogil=True)
def _sub_txn(b, p, end, kinds, type_base):
    """(start, end, table row) of the sub-txn at ``p`` of a multi (``Txn {int type, buffer
    data}``); row -1 where it does not read or its type is unknown."""
    if p + 8 > end:
        return 0, 0, -1
    type_ = _i32(b, p)
    n = _i32(b, p + 4)
    p += 8
    if n < -1 or n > end - p:
        return 0, 0, -1
    n = max(n, 0)
    return p, p + n, _type_row(kinds, type_base, type_)


@njit(cache=True, nogil=True)
def txn_ok(b, s, n, kinds, type_base):
    """Whether the txn ``b[s : s + n]`` decodes (``txnlog.decode_txn`` raises nothing): its
    header, the body its type's row of ``kinds`` describes (rows from ``type_base`` on, see
    ``txnlog.body_table``), then nothing or a TxnDigest. The sub-txns of a multi are walked by
    the same loop (their bodies need not be consumed to their end, optional fields default
    only at their end, as ``decode_body`` with ``sub``). A multi inside a multi gives False:
    the Python decoder decides those."""
    end = s + n
    if n < TXN_HEADER_SIZE:
        return False
    row = _type_row(kinds, type_base, _i32(b, s + TYPE_AT))
    if row < 0:
        return False
    width = kinds.shape[1]
    p = s + TXN_HEADER_SIZE
    k = 0
    sub = False
    outer_row = outer_k = outer_end = sub_end = left = 0
    while True:
        f = kinds[row, k] if k < width else F_END
        if f == F_END:
            if not sub:
                rem = end - p
                return rem == 0 or rem == TXN_DIGEST_SIZE
            left -= 1
            p, end = sub_end, outer_end
            if left == 0:
                sub, row, k = False, outer_row, outer_k + 1
                continue
            p, sub_end, row = _sub_txn(b, p, end, kinds, type_base)
            if row < 0:
                return False
            end, k = sub_end, 0
            continue
        kind = f & KIND_MASK
        rem = end - p
        if (f & F_OPTIONAL) != 0 and (rem == 0 or (not sub and rem == TXN_DIGEST_SIZE and kind != F_PATHS)):
            k += 1
            continue
        if kind == F_MULTI:
            if sub or p + 4 > end:
                return False
            count = _i32(b, p)
            p += 4
            if count < -1 or (count > end - p and count > MAX_REASONABLE):
                return False
            if count <= 0:
                k += 1
                continue
            outer_row, outer_k, outer_end, left = row, k, end, count
            p, sub_end, row = _sub_txn(b, p, end, kinds, type_base)
            if row < 0:
                return False
            end, k, sub = sub_end, 0, True
            continue
        if kind == F_PATHS and not sub and rem == TXN_DIGEST_SIZE:
            # closeSession: 12 bytes are a path list or a TxnDigest alone (txnlog._paths_or_none)
            q = _field_end(b, p, end, F_PATHS)
            if q >= 0 and (end - q == 0 or end - q == TXN_DIGEST_SIZE):
                p = q
        else:
            p = _field_end(b, p, end, kind)
            if p < 0:
                return False
        k += 1


@njit(cache=True, nogil=True)
def walk_log(b, pos, kinds, type_base, out):
    """Walk the entries of a transaction log from ``pos`` while each is whole and valid: a
    length in 1..MAX_REASONABLE, its 'B', the stored Adler32 (a long) equal to the txn's, and
    a txn that decodes (:func:`txn_ok`). Entry i's offset, txn length and zxid go to
    ``out[:, i]``, up to ``out``'s width. Returns (entries, the offset of the first entry not
    taken): whatever stopped the walk short of a full ``out`` (the end, padding, damage) is
    the caller's to tell."""
    n = b.shape[0]
    count = 0
    while count < out.shape[1] and pos + LOG_FRAME_SIZE <= n:
        crc = _i64(b, pos)
        length = _i32(b, pos + 8)
        s = pos + LOG_FRAME_SIZE
        e = s + length
        if length <= 0 or length > MAX_REASONABLE or e + 1 > n or b[e] != END_OF_RECORD:
            break
        if crc < 0 or crc != _adler32(b, s, length) or not txn_ok(b, s, length, kinds, type_base):
            break
        out[0, count] = pos
        out[1, count] = length
        out[2, count] = _i64(b, s + ZXID_AT)
        count += 1
        pos = e + 1
    return count, pos
