"""The 3.6+ tree digest (``DigestCalculator``, ``NodeHashMapImpl``, ``AdHash``), for single
nodes changed by a log replay. The bulk computation over a snapshot is the numba kernel in
:mod:`pipelines.zookeeper.kernels` (same definition):

    node digest = CRC32(path bytes (root "") + data (if not null) +
                        czxid, mzxid, pzxid, ctime, mtime (long), version, cversion,
                        aversion (int), ephemeralOwner (long));  0 under "/zookeeper/"
    tree digest = sum of node digests mod 2**64 (stored as a signed long)
"""

from __future__ import annotations

import zlib

from pipelines.zookeeper.jute import DIGEST_STAT

MASK = (1 << 64) - 1
SYSTEM_PREFIX = "/zookeeper/"


def node_digest(
    path: str, data: bytes | None, czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion, owner
) -> int:
    if path.startswith(SYSTEM_PREFIX):
        return 0
    c = zlib.crc32(path.encode("utf-8", "surrogateescape"))
    if data:
        c = zlib.crc32(data, c)
    stat = DIGEST_STAT.pack(czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion, owner)
    return zlib.crc32(stat, c)


def signed(total: int) -> int:
    total &= MASK
    return total - (1 << 64) if total >= 1 << 63 else total
