"""ZooKeeper snapshot files (``version-2/snapshot.<hex zxid>[.gz|.snappy]``), 3.4 through 3.9.

Grammar (``FileSnap.serialize``, ``SerializeUtils.serializeSnapshot``, ``DataTree.serialize``,
``SnapStream.sealStream``; jute, big-endian)::

    snapshot  := header sessions aclcache nodes seal [digest seal] [lastzxid seal]
    header    := int magic "ZKSN" , int version (2) , long dbid
    sessions  := int count , (long sessionId , int timeout)*
    aclcache  := int count , (long id , vector<ACL> acls)*
    nodes     := see pipelines.zookeeper.kernels (parents before children, root path "")
    seal      := long adler32(all bytes before it) , ustring "/"
    digest    := long zxid , int digestVersion , long treeDigest          (3.6+)
    lastzxid  := long lastProcessedZxid                                   (3.9+)

Bytes after the first seal: 0 (3.4/3.5), 33 (digest), 21 (lastzxid), 54 (both).
The stream may be gzip (``.gz``) or xerial-framed snappy (``.snappy``, ``SnappyOutputStream``:
magic ``\\x82SNAPPY\\x00``, int version, int compatible version, then (int length, raw
snappy block)*); the compression is recognised from the first bytes.
"""

from __future__ import annotations

import gzip
import mmap
import re
import struct
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines.zookeeper import kernel_tables as tables
from pipelines.zookeeper import prefetch
from pipelines.zookeeper.errors import (
    BadMagic,
    DigestMismatch,
    SealMismatch,
    Truncated,
    UnreasonableLength,
    ZkFormatError,
)
from pipelines.zookeeper.jute import FILE_HEADER, Reader
from pipelines.zookeeper.native import kernels
from pipelines.zookeeper.rows import Spans, StatRecords

SNAP_MAGIC = b"ZKSN"
SNAP_VERSION = 2
DIGEST_VERSION = 2  # DigestCalculator.DIGEST_VERSION of 3.6+
GZIP_MAGIC = b"\x1f\x8b"
SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SESSION = np.dtype([("id", ">i8"), ("timeout", ">i4")])


def zxid_of(name: str, prefix: str) -> int | None:
    m = re.match(rf"^{prefix}\.([0-9a-fA-F]+)(\.gz|\.snappy)?$", name)
    return int(m.group(1), 16) if m else None


@dataclass(frozen=True)
class ZxidDigest:
    zxid: int
    version: int
    digest: int


@dataclass
class NodeColumns:
    """Node records as columns over the snapshot bytes (``buf``): offsets/lengths of paths
    and data, offsets of the persisted stats, and each node's digest. The stat fields
    (:data:`~pipelines.zookeeper.rows.PERSISTED_STAT`) are decoded by :meth:`stats`."""

    buf: np.ndarray
    path_off: np.ndarray
    path_len: np.ndarray
    data_off: np.ndarray
    data_len: np.ndarray
    stat_off: np.ndarray
    digest: np.ndarray

    def __len__(self) -> int:
        return int(self.path_off.shape[0])

    def stats(self) -> dict[str, np.ndarray]:
        """The persisted stat columns, decoded."""
        return self.stat_records().take()

    def stat_records(self) -> StatRecords:
        return StatRecords(self.buf, self.stat_off)

    def path_spans(self) -> Spans:
        """The paths as ranges of the snapshot bytes (no copy)."""
        return Spans(self.buf, self.path_off, self.path_len)

    def data_spans(self) -> Spans:
        return Spans(self.buf, self.data_off, self.data_len)

    def paths(self) -> pa.Array:
        return self.path_spans().take(None, pa.large_string())

    def data(self) -> pa.Array:
        return self.data_spans().take(None, pa.large_binary())


@dataclass
class Snapshot:
    file: str
    zxid: int | None  # from the file name: where writing started
    dbid: int
    sessions: np.ndarray  # SESSION records
    acls: dict[int, list]
    nodes: NodeColumns
    digest: ZxidDigest | None = None  # stored (3.6+)
    computed_digest: int = 0
    last_processed_zxid: int | None = None  # stored (3.9+)
    compression: str = "none"
    digest_verified: bool | None = None  # None: no digest, or fuzzy (checked during replay)
    notes: list[str] = field(default_factory=list)

    @property
    def max_node_zxid(self) -> int:
        if len(self.nodes) == 0:
            return 0
        st = self.nodes.stats()
        return int(max(st["czxid"].max(), st["mzxid"].max(), st["pzxid"].max()))

    @property
    def holds_through(self) -> int | None:
        """The last zxid the nodes are known to hold, so a replay starts after it: the stored
        digest's zxid when it matched (a fuzzy snapshot is exactly the tree there, however far
        past its name its writing ended), else the name's (``FileTxnSnapLog.restore``)."""
        if self.digest_verified and self.digest is not None and self.digest.zxid > (self.zxid or 0):
            return self.digest.zxid
        return self.zxid

    @property
    def consistent_at_or_after(self) -> int:
        """A zxid the snapshot's state is known to include (fuzzy snapshots go past their name)."""
        known = [self.zxid or 0, self.max_node_zxid]
        if self.digest is not None:
            known.append(self.digest.zxid)
        if self.last_processed_zxid is not None:
            known.append(self.last_processed_zxid)
        return max(known)


def read_bytes(path: Path) -> tuple[bytes | mmap.mmap, str]:
    """The snapshot's uncompressed bytes and the compression it had. An uncompressed file is
    mapped read-only, not copied (ZooKeeper never rewrites a snapshot in place)."""
    file = str(path)
    raw = prefetch.mapped(path)  # mapped while the process started (kaudit extract zk-snapshot FILE)
    if raw is not None:
        return raw, "none"
    try:
        with open(path, "rb") as f:
            raw = _mapped(f)
    except OSError as err:
        raise ZkFormatError(file, 0, f"cannot read: {err.strerror or err}") from None
    if raw[: len(GZIP_MAGIC)] == GZIP_MAGIC:
        try:
            return gzip.decompress(raw), "gzip"
        except (OSError, EOFError, zlib.error) as err:
            raise Truncated(file, 0, f"corrupt or truncated gzip stream: {err}") from None
    if raw[: len(SNAPPY_MAGIC)] == SNAPPY_MAGIC:
        return _unsnappy(raw, file), "snappy"
    return raw, "none"


def _mapped(f) -> bytes | mmap.mmap:
    """The file mapped read-only, or read when it cannot be mapped (empty, a pipe, ...)."""
    try:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return f.read()


def _unsnappy(raw: bytes, file: str) -> bytes:
    import snappy

    r = Reader(raw, file, pos=len(SNAPPY_MAGIC))
    r.int("snappy stream version")
    r.int("snappy compatible version")
    out = []
    while r.remaining:
        at = r.pos
        n = r.int("snappy block length")
        if n < 0 or n > r.remaining:
            raise Truncated(file, at, f"snappy block of {n} bytes with {r.remaining} left")
        try:
            out.append(snappy.uncompress(raw[r.pos : r.pos + n]))
        except Exception as err:  # the codec raises its own types
            raise ZkFormatError(file, at, f"corrupt snappy block: {err}") from None
        r.pos += n
    return b"".join(out)


def parse(path: Path | str, *, verify_digest: bool = True) -> Snapshot:
    """Parse one snapshot file; raises a :class:`ZkFormatError` subclass naming the position."""
    path = Path(path)
    file = str(path)
    buf, compression = read_bytes(path)
    r = Reader(buf, file)
    if len(buf) < FILE_HEADER.size:
        if len(buf) == 0:
            raise Truncated(file, 0, "empty file, not a snapshot")
        raise Truncated(file, 0, f"truncated: {len(buf)} bytes, a snapshot header needs {FILE_HEADER.size}")
    magic, version, dbid = r.unpack(FILE_HEADER, "header")
    if magic != SNAP_MAGIC:
        raise BadMagic(file, 0, f"bad magic {magic!r}, not a ZooKeeper snapshot (expected {SNAP_MAGIC!r})")
    if version != SNAP_VERSION:
        raise BadMagic(file, 4, f"unsupported snapshot version {version}")

    # sessions: fixed-size records, read as one numpy view
    at = r.pos
    count = r.int("session count")
    if count < 0 or count * SESSION.itemsize > r.remaining:
        cls = UnreasonableLength if count < 0 or count * SESSION.itemsize > tables.MAX_REASONABLE else Truncated
        raise cls(file, at, f"{'unreasonable' if cls is UnreasonableLength else 'truncated'} session count {count}")
    sessions = np.frombuffer(buf, SESSION, count, r.pos).copy()
    r.pos += count * SESSION.itemsize

    acls: dict[int, list] = {}
    at = r.pos
    count = r.int("ACL cache size")
    if count < 0 or count * 12 > r.remaining:
        raise UnreasonableLength(file, at, f"unreasonable ACL cache size {count}")
    for _ in range(count):
        acl_id = r.long("ACL id")
        acls[acl_id] = r.acls() or []

    arr = np.frombuffer(buf, np.uint8)
    cols = np.empty((5, kernels().locate_capacity(len(arr), r.pos)), np.int64)
    status, err_pos, n, end, bad_len = kernels().locate_nodes(arr, r.pos, cols)
    if status != tables.OK:
        reason = tables.STATUS_REASON[status]
        if status == tables.UNREASONABLE:
            raise UnreasonableLength(file, err_pos, f"unreasonable length {bad_len} in node record {n}")
        raise Truncated(file, err_pos, f"{reason} (record {n})")
    # the seal's Adler32 of everything before it: mostly done on the way in (prefetch), else
    # on another core while the node digests are computed (zlib releases the GIL): ~0.05 s of 1M znodes
    sealed = prefetch.sealed(buf, end)
    if sealed is None:
        sealed = _Adler32(buf, end)
    located = tuple(col[:n] for col in cols)
    nodes = NodeColumns(arr, *located, _digests(arr, located, n))
    r.pos = end

    snap = Snapshot(file, zxid_of(path.name, "snapshot"), dbid, sessions, acls, nodes, compression=compression)
    snap.computed_digest = int(kernels().tree_digest(nodes.digest, np.ones(n, np.bool_)))

    checksum = _seal(r, buf, None, "snapshot seal", sealed if isinstance(sealed, int) else sealed.result())
    after = r.remaining
    if after == 33 or after == 54:
        snap.digest = ZxidDigest(r.long("digest zxid"), r.int("digest version"), r.long("digest"))
        checksum = _seal(r, buf, checksum, "digest seal")
    if r.remaining == 21:
        snap.last_processed_zxid = r.long("last processed zxid")
        _seal(r, buf, checksum, "last-processed-zxid seal")
    if r.remaining:
        raise ZkFormatError(file, r.pos, f"{r.remaining} unexpected bytes after the seal")
    if verify_digest:
        check_digest(snap)
    return snap


HALF_DIGESTS = 50_000  # nodes from which the digests are computed in two halves, two threads


def _digests(arr: np.ndarray, located: tuple, n: int) -> np.ndarray:
    """The node digests of the ``located`` node records (``kernels.node_digests``, which
    releases the GIL): the second half on another thread from :data:`HALF_DIGESTS` nodes
    (1M znodes: 0.16 s of CRC-32 on one core)."""
    from concurrent.futures import ThreadPoolExecutor

    digest = np.empty(n, np.uint32)
    args = (arr, *located, tables.CRC_TABLES8, tables.ZK_PREFIX)
    if n < HALF_DIGESTS:
        kernels().node_digests(*args, 0, n, digest)
        return digest
    half = n // 2
    with ThreadPoolExecutor(1, thread_name_prefix="snapshot-digests") as pool:
        second = pool.submit(kernels().node_digests, *args, half, n, digest)
        kernels().node_digests(*args, 0, half, digest)
        second.result()  # re-raises the other thread's error here
    return digest


class _Adler32(threading.Thread):
    """``zlib.adler32(buf[:end])`` computed by a thread (:meth:`result` waits for it)."""

    def __init__(self, buf, end: int):
        super().__init__(name="snapshot-seal", daemon=True)
        self.buf, self.end, self.value = buf, end, None
        self.start()

    def run(self) -> None:
        self.value = zlib.adler32(memoryview(self.buf)[: self.end])

    def result(self) -> int:
        self.join()
        return self.value


def _seal(r: Reader, buf: bytes, state: tuple[int, int] | None, what: str,
          computed: int | None = None) -> tuple[int, int]:
    """Check the seal at the cursor against the running Adler32 of every byte before it.
    ``state`` = (position, checksum) reached by the previous seal, or ``computed``: the
    checksum of every byte before the cursor, already known; returns the new state."""
    at = r.pos
    start, running = state if state else (0, 1)
    checksum = computed if computed is not None else zlib.adler32(memoryview(buf)[start:at], running)
    stored = r.long(what) & 0xFFFFFFFFFFFFFFFF
    marker = r.ustring(f"{what} marker")
    if stored != checksum:
        raise SealMismatch(r.file, at, f"{what} mismatch: stored Adler32 {stored:#x}, computed {checksum:#x}")
    if marker != "/":
        raise ZkFormatError(r.file, at + 8, f"{what}: expected marker '/', got {marker!r}")
    return (at, checksum)


SEAL_MARKER = b"\x00\x00\x00\x01/"  # the ustring "/" that ends every seal


def stored_digest(path: Path | str) -> ZxidDigest | None:
    """The tree digest a snapshot file stores after its nodes (3.6+), read from the end of the
    stream alone (an uncompressed file is mapped: only its last page is read), or None when it
    has none. The trailer is recognised by its seal markers (the nodes' seal, the digest's, and
    the last processed zxid's when there); the seals' checksums are not checked (that takes
    every byte): a snapshot used as a start is parsed whole."""
    buf, _ = read_bytes(Path(path))
    n, m = len(buf), len(SEAL_MARKER)
    # (bytes after the nodes' seal, where the seal markers end counted from the nodes' seal marker)
    for after, ends in ((54, (m, m + 33, m + 54)), (33, (m, m + 33))):
        if n < FILE_HEADER.size + 8 + m + after:
            continue
        tail = bytes(buf[n - after - m : n])
        if all(tail[e - m : e] == SEAL_MARKER for e in ends):
            zxid, version, digest = struct.unpack_from(">qiq", tail, m)
            if version == DIGEST_VERSION:
                return ZxidDigest(zxid, version, digest)
    return None


def check_digest(snap: Snapshot) -> None:
    """Compare the stored tree digest with the recomputed one when the snapshot is known to be
    consistent at the digest's zxid; a fuzzy snapshot is left for the replay to verify."""
    d = snap.digest
    if d is None or d.zxid == 0 or d.version != DIGEST_VERSION:
        return
    if snap.computed_digest == d.digest:
        snap.digest_verified = True
        return
    if snap.zxid is not None and d.zxid > snap.zxid:
        snap.notes.append(f"fuzzy snapshot: digest of zxid {d.zxid:#x} is checked by the log replay")
        return
    raise DigestMismatch(
        snap.file, 0, f"tree digest mismatch at zxid {d.zxid:#x}: stored {d.digest}, computed {snap.computed_digest}"
    )
