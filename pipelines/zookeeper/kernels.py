"""Numba kernels of the snapshot hot path: the node-record walk, the tree digest and the
gathering of paths/data into Arrow buffers, the path sort. No Python object per node.
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
    CRC_TABLE,
    CRC_TABLES8,
    MAX_REASONABLE,
    MIN_NODE,
    NULL_PATH,
    OK,
    STAT_SIZE,
    STATUS_REASON,
    TRUNCATED,
    UNREASONABLE,
    ZK_PREFIX,
)


@njit(cache=True, inline="always")
def _i32(b, p):
    v = (np.uint32(b[p]) << 24) | (np.uint32(b[p + 1]) << 16) | (np.uint32(b[p + 2]) << 8) | np.uint32(b[p + 3])
    return np.int64(np.int32(v))


@njit(cache=True, inline="always")
def _i64(b, p):
    v = np.uint64(0)
    for k in range(8):
        v = (v << np.uint64(8)) | np.uint64(b[p + k])
    return np.int64(v)


@njit(cache=True)
def _crc_update(crc, b, start, n, table):
    c = crc
    for k in range(start, start + n):
        c = table[(c ^ np.uint32(b[k])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return c


@njit(cache=True)
def _crc_update8(crc, b, start, n, t):
    """:func:`_crc_update` eight bytes at a time (``t`` = :data:`CRC_TABLES8`)."""
    c = crc
    p = start
    end = start + n
    while p + 8 <= end:
        one = c ^ (np.uint32(b[p]) | (np.uint32(b[p + 1]) << np.uint32(8)) | (np.uint32(b[p + 2]) << np.uint32(16))
                   | (np.uint32(b[p + 3]) << np.uint32(24)))
        c = (t[7, one & np.uint32(0xFF)] ^ t[6, (one >> np.uint32(8)) & np.uint32(0xFF)]
             ^ t[5, (one >> np.uint32(16)) & np.uint32(0xFF)] ^ t[4, one >> np.uint32(24)]
             ^ t[3, b[p + 4]] ^ t[2, b[p + 5]] ^ t[1, b[p + 6]] ^ t[0, b[p + 7]])
        p += 8
    while p < end:
        c = t[0, (c ^ np.uint32(b[p])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
        p += 1
    return c


@njit(cache=True)
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


@njit(cache=True)
def count_nodes(b, pos):
    """Hop over node records from ``pos``: (status, error position, node count, position
    after the end marker, bad length)."""
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
        q += 4 + (dl if dl > 0 else 0)
        if q + 8 + STAT_SIZE > n_total:
            return TRUNCATED, q, count, p, 0
        p = q + 8 + STAT_SIZE
        count += 1


@njit(cache=True)
def walk_nodes(b, pos, count, table, zk_prefix):
    """Fill the columns of ``count`` node records starting at ``pos`` (validated by
    :func:`count_nodes`). Returns the columns and the per-node digest (``table`` =
    :data:`CRC_TABLES8`)."""
    path_off = np.empty(count, np.int64)
    path_len = np.empty(count, np.int32)
    data_off = np.empty(count, np.int64)
    data_len = np.empty(count, np.int32)
    acl = np.empty(count, np.int64)
    czxid = np.empty(count, np.int64)
    mzxid = np.empty(count, np.int64)
    ctime = np.empty(count, np.int64)
    mtime = np.empty(count, np.int64)
    version = np.empty(count, np.int32)
    cversion = np.empty(count, np.int32)
    aversion = np.empty(count, np.int32)
    owner = np.empty(count, np.int64)
    pzxid = np.empty(count, np.int64)
    digest = np.zeros(count, np.uint32)
    np_ = zk_prefix.shape[0]
    p = pos
    for i in range(count):
        ln = _i32(b, p)
        path_off[i] = p + 4
        path_len[i] = ln
        q = p + 4 + ln
        dl = _i32(b, q)
        data_off[i] = q + 4
        data_len[i] = dl
        q += 4 + (dl if dl > 0 else 0)
        acl[i] = _i64(b, q)
        s = q + 8
        czxid[i] = _i64(b, s)
        mzxid[i] = _i64(b, s + 8)
        ctime[i] = _i64(b, s + 16)
        mtime[i] = _i64(b, s + 24)
        version[i] = _i32(b, s + 32)
        cversion[i] = _i32(b, s + 36)
        aversion[i] = _i32(b, s + 40)
        owner[i] = _i64(b, s + 44)
        pzxid[i] = _i64(b, s + 52)
        p = s + STAT_SIZE
        # node digest, unless under /zookeeper/
        system = ln >= np_
        if system:
            for k in range(np_):
                if b[path_off[i] + k] != zk_prefix[k]:
                    system = False
                    break
        if system:
            continue
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
    return (path_off, path_len, data_off, data_len, acl, czxid, mzxid, ctime, mtime,
            version, cversion, aversion, owner, pzxid, digest)


@njit(cache=True)
def gather(b, offs, lens, out_offsets, out):
    """Copy the byte ranges (offs[i], lens[i]) of ``b`` (null = negative length) into
    ``out`` at ``out_offsets[i]``: the values buffer of an Arrow (large) binary array."""
    for i in range(offs.shape[0]):
        n = lens[i]
        if n <= 0:
            continue
        o = out_offsets[i]
        s = offs[i]
        for k in range(n):
            out[o + k] = b[s + k]


@njit(cache=True)
def tree_digest(digests, alive):
    total = np.uint64(0)
    for i in range(digests.shape[0]):
        if alive[i]:
            total += np.uint64(digests[i])
    return np.int64(total)


@njit(cache=True)
def parent_lengths(offsets, values):
    """Byte length of each path's parent (up to its last '/'); -1 for the root ("")."""
    n = offsets.shape[0] - 1
    out = np.empty(n, np.int64)
    for i in range(n):
        s, e = offsets[i], offsets[i + 1]
        k = e - 1
        while k >= s and values[k] != 47:
            k -= 1
        out[i] = k - s if k >= s else -1
    return out


@njit(cache=True)
def preorder_parents(offsets, values, plen):
    """Parent row of each node when rows are in the snapshot's pre-order (parents before
    children, each subtree contiguous): the parent is on the stack of open ancestors.
    Returns (parents, ok); ok is False when the order is not a pre-order."""
    n = offsets.shape[0] - 1
    parents = np.full(n, -1, np.int64)
    stack = np.empty(n + 1, np.int64)
    depth = 0
    for i in range(n):
        want = plen[i]
        if want < 0:  # the root
            depth = 0
            stack[0] = i
            depth = 1
            continue
        found = -1
        while depth > 0:
            top = stack[depth - 1]
            tl = offsets[top + 1] - offsets[top]
            if tl == want:
                same = True
                a, b = offsets[top], offsets[i]
                for k in range(want):
                    if values[a + k] != values[b + k]:
                        same = False
                        break
                if same:
                    found = top
                    break
            depth -= 1
        if found < 0:
            return parents, False
        parents[i] = found
        stack[depth] = i
        depth += 1
    return parents, True


@njit(cache=True, inline="always")
def _key8(values, start, end, at):
    """Bytes [at, at+8) of the string values[start:end], big-endian, zero-padded (ZooKeeper
    paths hold no NUL, so padding sorts a shorter string first, as a byte compare does)."""
    k = np.uint64(0)
    for j in range(8):
        k = k << np.uint64(8)
        p = start + at + j
        if p < end:
            k = k | np.uint64(values[p])
    return k


@njit(cache=True)
def sort_strings(offsets, values, rows):
    """The order of strings ``rows`` (indices into Arrow offsets/values) by their bytes:
    most-significant-digit first, 8 bytes per digit; a group whose 8 bytes are all equal
    (long shared prefixes like /brokers/topics/) goes one digit deeper without sorting."""
    n = rows.shape[0]
    order = rows.copy()
    keys = np.empty(n, np.uint64)
    lo_s = np.empty(64, np.int64)
    hi_s = np.empty(64, np.int64)
    at_s = np.empty(64, np.int64)
    top = 0
    lo_s[0], hi_s[0], at_s[0] = 0, n, 0
    top = 1
    while top > 0:
        top -= 1
        lo, hi, at = lo_s[top], hi_s[top], at_s[top]
        if hi - lo < 2:
            continue
        longer = False
        for i in range(lo, hi):
            r = order[i]
            s, e = offsets[r], offsets[r + 1]
            keys[i] = _key8(values, s, e, at)
            if e - s > at + 8:
                longer = True
        same = True
        for i in range(lo + 1, hi):
            if keys[i] != keys[lo]:
                same = False
                break
        if same:
            if longer:
                if top == lo_s.shape[0]:
                    lo_s, hi_s, at_s = _grow3(lo_s, hi_s, at_s)
                lo_s[top], hi_s[top], at_s[top] = lo, hi, at + 8
                top += 1
            continue
        idx = np.argsort(keys[lo:hi])
        order[lo:hi] = order[lo:hi][idx]
        keys[lo:hi] = keys[lo:hi][idx]
        i = lo
        while i < hi:
            j = i + 1
            while j < hi and keys[j] == keys[i]:
                j += 1
            if j - i > 1:
                deeper = False
                for t in range(i, j):
                    r = order[t]
                    if offsets[r + 1] - offsets[r] > at + 8:
                        deeper = True
                        break
                if deeper:
                    if top == lo_s.shape[0]:
                        lo_s, hi_s, at_s = _grow3(lo_s, hi_s, at_s)
                    lo_s[top], hi_s[top], at_s[top] = i, j, at + 8
                    top += 1
            i = j
    return order


@njit(cache=True)
def _grow3(a, b, c):
    m = a.shape[0]
    a2, b2, c2 = np.empty(2 * m, np.int64), np.empty(2 * m, np.int64), np.empty(2 * m, np.int64)
    a2[:m], b2[:m], c2[:m] = a, b, c
    return a2, b2, c2



@njit(cache=True)
def subtree_mask(offsets, values, prefix):
    """Which strings (Arrow offsets/values) are ``prefix`` or start with ``prefix`` + "/"."""
    n = offsets.shape[0] - 1
    m = prefix.shape[0]
    out = np.zeros(n, np.bool_)
    for i in range(n):
        s, e = offsets[i], offsets[i + 1]
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
