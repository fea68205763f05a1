"""Numba kernels of the snapshot hot path: the node-record walk, the tree digest and the
gathering of paths/data into Arrow buffers. No Python object per node.

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

STAT_SIZE = 60
MIN_NODE = 4 + 4 + 8 + STAT_SIZE
MAX_REASONABLE = 64 << 20

OK, TRUNCATED, UNREASONABLE, NULL_PATH = 0, 1, 2, 3
STATUS_REASON = {
    TRUNCATED: "truncated inside a node record",
    UNREASONABLE: "unreasonable length",
    NULL_PATH: "null path in a node record",
}

ZK_PREFIX = np.frombuffer(b"/zookeeper/", dtype=np.uint8).copy()


def _crc_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if (c & 1) else (c >> 1)
        table[i] = c
    return table


CRC_TABLE = _crc_table()


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
    :func:`count_nodes`). Returns the columns and the per-node digest."""
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
    scratch = np.empty(STAT_SIZE, np.uint8)
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
        # czxid, mzxid stay; pzxid moves before ctime; then ctime, mtime, ints, owner
        for k in range(16):
            scratch[k] = b[s + k]
        for k in range(8):
            scratch[16 + k] = b[s + 52 + k]
        for k in range(16):
            scratch[24 + k] = b[s + 16 + k]
        for k in range(12):
            scratch[40 + k] = b[s + 32 + k]
        for k in range(8):
            scratch[52 + k] = b[s + 44 + k]
        c = np.uint32(0xFFFFFFFF)
        c = _crc_update(c, b, path_off[i], ln, table)
        if dl > 0:
            c = _crc_update(c, b, data_off[i], dl, table)
        c = _crc_update(c, scratch, 0, STAT_SIZE, table)
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
