"""ZooKeeper transaction logs (``version-2/log.<hex zxid of the first txn>``).

Grammar (``FileTxnLog``, ``Util.readTxnBytes``, ``SerializeUtils.deserializeTxn``; jute)::

    log      := header entry* [zero padding]
    header   := int magic "ZKLG" , int version (2) , long dbid
    entry    := long crc (Adler32 of txn) , int length , txn[length] , byte 'B'
    txn      := TxnHeader body [TxnDigest]
    TxnHeader := long clientId , int cxid , long zxid , long time , int type
    TxnDigest := int version , long treeDigest           (3.6+, when 12 bytes remain)

ZooKeeper (``FileTxnIterator.next``, ``Util.readTxnBytes``) ends a log at end of file, at a
zero length (the log is pre-allocated with zeros: ``FilePadding``) or at an entry without its
'B' or running past the end (a partial last write), and moves to the next log; a CRC
mismatch or an unreasonable length is an error. kaudit tells these apart by what follows:

- a zero length with only zeros after it is the normal end (``padding``);
- an entry cut short (no 'B', past the end, a partial frame) with nothing but zeros after
  the bytes it announces is a ``partial`` last write;
- anything else is damage: the reader yields a :class:`Damage` (offset, reason, raw bytes)
  and resyncs to the next valid entry (a frame whose Adler32, length and 'B' hold and whose
  txn decodes), found by a linear scan with cheap checks first. Whether the txns after it
  may be replayed is the caller's decision (zxid contiguity). Damage with no valid entry
  after it ends the log (``corrupt``).

Bodies are data: :data:`BODIES` gives, per txn type, its name and field table (the records
of ``zookeeper.jute``, package ``org.apache.zookeeper.txn``); one decoder reads them all.
A field marked optional may be absent at the end of the body (``CreateTxnV0`` has no
parentCVersion; ``closeSession`` has no path list before 3.6).

Speed: the valid entries are found by one numba pass (``kernels.walk_log``: framing, 'B',
Adler32, and whether the txn would decode, from :data:`BODIES` encoded by :func:`body_table`),
and only the txns a caller wants are decoded (``LogReader.skip_through``: a replay skips the
txns its snapshot holds already, often all of a big log). The walk stops at anything else
and the per-entry code below tells what it is, so the outcome (damage rows, resyncs, the
end) does not depend on what is skipped: a CRC-valid txn that does not decode is
``undecodable txn`` damage there too.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipelines.zookeeper import kernel_tables as kt
from pipelines.zookeeper.errors import BadMagic, ZkFormatError
from pipelines.zookeeper.jute import (
    FILE_HEADER,
    LOG_FRAME,
    MAX_REASONABLE,
    TXN_DIGEST,
    TXN_HEADER,
    Reader,
)
from pipelines.zookeeper.native import kernels

LOG_MAGIC = b"ZKLG"
LOG_VERSION = 2
RAW_MAX = 4096  # bytes of a damaged entry kept in its quarantine row
SCAN_CHUNK = 1 << 22  # bytes per step of the resync scan
WALK_CHUNK = 1 << 16  # entries per call of the framing walk (kernels.walk_log)

# field kinds -> reader
_READ = {
    "int": Reader.int,
    "long": Reader.long,
    "bool": Reader.bool,
    "ustring": Reader.ustring,
    "buffer": Reader.buffer,
    "acls": Reader.acls,
    "paths": Reader.paths,
}

PATH = ("path", "ustring")
DATA = ("data", "buffer")
ACL = ("acl", "acls")
VERSION = ("version", "int")
PARENT_CVERSION = ("parent_cversion", "int", -1)  # optional: absent in CreateTxnV0

# type -> (op name, fields); a third item in a field = optional, with that default
BODIES: dict[int, tuple[str, tuple]] = {
    1: ("create", (PATH, DATA, ACL, ("ephemeral", "bool"), PARENT_CVERSION)),
    15: ("create2", (PATH, DATA, ACL, ("ephemeral", "bool"), PARENT_CVERSION)),
    19: ("createContainer", (PATH, DATA, ACL, ("parent_cversion", "int"))),
    21: ("createTTL", (PATH, DATA, ACL, ("parent_cversion", "int"), ("ttl", "long"))),
    2: ("delete", (PATH,)),
    20: ("deleteContainer", (PATH,)),
    5: ("setData", (PATH, DATA, VERSION)),
    16: ("reconfig", (PATH, DATA, VERSION)),
    7: ("setACL", (PATH, ACL, VERSION)),
    13: ("check", (PATH, VERSION)),
    14: ("multi", (("txns", "multi"),)),
    -10: ("createSession", (("timeout", "int"),)),
    -11: ("closeSession", (("paths_to_delete", "paths", None),)),
    -1: ("error", (("err", "int"),)),
}


# field kinds -> the codes of the kernels' body table
_KIND = {"int": kt.F_INT, "long": kt.F_LONG, "bool": kt.F_BOOL, "ustring": kt.F_BUFFER, "buffer": kt.F_BUFFER,
         "acls": kt.F_ACLS, "paths": kt.F_PATHS, "multi": kt.F_MULTI}


def body_table() -> tuple[np.ndarray, int]:
    """:data:`BODIES` for ``kernels.txn_ok``: (kinds, the type of row 0), a row per txn type
    from the lowest to the highest, holding its fields' kind codes (+ ``F_OPTIONAL``) then
    ``F_END``; ``F_UNKNOWN`` for a type not in BODIES (codes: :mod:`~pipelines.zookeeper.kernel_tables`)."""
    base = min(BODIES)
    width = max(len(fields) for _, fields in BODIES.values()) + 1
    kinds = np.full((max(BODIES) - base + 1, width), kt.F_UNKNOWN, np.int8)
    for type_, (_, fields) in BODIES.items():
        kinds[type_ - base] = kt.F_END
        for k, f in enumerate(fields):
            kinds[type_ - base, k] = _KIND[f[1]] + (kt.F_OPTIONAL if len(f) > 2 else 0)
    kinds.flags.writeable = False
    return kinds, base


BODY_TABLE = body_table()


class UnknownTxnType(ZkFormatError):
    """A txn type kaudit does not know: replaying past it could be wrong."""


@dataclass(slots=True)
class Txn:
    file: str
    offset: int  # of the entry's crc field
    client_id: int
    cxid: int
    zxid: int
    time: int
    type: int
    op: str
    body: dict
    digest: tuple[int, int] | None = None  # (version, tree digest) after this txn


@dataclass
class LogEnd:
    kind: str  # 'eof' | 'padding' | 'partial' | 'corrupt'
    offset: int
    reason: str = ""
    raw: bytes | None = None


@dataclass
class Damage:
    """Unreadable bytes ``offset:resume`` of a log, yielded between txns; reading resumes at
    the next valid entry (``resume``)."""

    file: str
    offset: int
    resume: int
    reason: str
    raw: bytes | None = None


def decode_body(r: Reader, type_: int, *, sub: bool = False) -> tuple[str, dict]:
    spec = BODIES.get(type_)
    if spec is None:
        raise UnknownTxnType(r.file, r.base + r.pos, f"unknown txn type {type_}")
    op, fields = spec
    body: dict = {}
    for f in fields:
        name, kind = f[0], f[1]
        if len(f) > 2 and (r.remaining == 0 or (not sub and r.remaining == TXN_DIGEST.size and kind != "paths")):
            body[name] = f[2]
            continue
        if kind == "multi":
            body[name] = _multi(r)
        elif kind == "paths" and not sub and r.remaining == TXN_DIGEST.size:
            # closeSession: 12 bytes are either a TxnDigest alone or a short path list
            body[name] = _paths_or_none(r)
        else:
            body[name] = _READ[kind](r, name)
    return op, body


def _paths_or_none(r: Reader) -> list | None:
    save = r.pos
    try:
        paths = r.paths()
        if r.remaining in (0, TXN_DIGEST.size):
            return paths
    except ZkFormatError:
        pass
    r.pos = save
    return None


def _multi(r: Reader) -> list[tuple[int, str, dict]]:
    """MultiTxn { vector<Txn {int type, buffer data}> }: (type, op, body) per sub-txn."""
    out = []
    count = r.length("multi count")
    for _ in range(max(count, 0)):
        sub_type = r.int("multi sub-txn type")
        start = r.pos
        data = r.buffer("multi sub-txn") or b""
        sub = Reader(data, r.file, base=r.base + start + 4)
        op, body = decode_body(sub, sub_type, sub=True)
        out.append((sub_type, op, body))
    return out


def decode_txn(data: bytes, file: str, offset: int) -> Txn:
    """One txn (header, body, optional digest) from the bytes of a log entry."""
    r = Reader(data, file, base=offset + LOG_FRAME.size)
    client_id, cxid, zxid, time, type_ = r.unpack(TXN_HEADER, "txn header")
    op, body = decode_body(r, type_)
    digest = None
    if r.remaining == TXN_DIGEST.size:
        digest = r.unpack(TXN_DIGEST, "txn digest")
    elif r.remaining:
        raise ZkFormatError(file, r.base + r.pos, f"{r.remaining} unexpected bytes after a {op} txn")
    return Txn(file, offset, client_id, cxid, zxid, time, type_, op, body, digest)


class LogReader:
    """Iterates the txns of one log file (and :class:`Damage` items where bytes are
    unreadable); ``end`` tells how the reading stopped.

    Txns with a zxid at or below ``skip_through`` are not yielded (the caller may raise it
    between items): a replay has them already. The valid entries are found by one framing
    walk (``kernels.walk_log``: lengths, 'B', Adler32, and that the txn would decode), and only
    the txns yielded are decoded into :class:`Txn`; the walk stops short at anything else,
    which the step below it tells apart (padding, a partial write, damage and the resync), so
    damage among the skipped txns is reported as among the others."""

    def __init__(self, path: Path | str, skip_through: int | None = None):
        self.path = Path(path)
        self.file = str(path)
        self.end: LogEnd | None = None
        self.dbid: int | None = None
        self.skip_through = skip_through

    def _skipped(self, zxid: int) -> bool:
        return self.skip_through is not None and zxid <= self.skip_through

    def _next_wanted(self, zxids: np.ndarray, i: int, count: int) -> int:
        """The first entry from ``i`` whose txn is not skipped (``count`` if none)."""
        if self.skip_through is None:
            return i
        later = np.flatnonzero(zxids[i:count] > self.skip_through)
        return i + int(later[0]) if len(later) else count

    def __iter__(self):
        file = self.file
        try:
            buf = self.path.read_bytes()
        except OSError as err:
            raise ZkFormatError(file, 0, f"cannot read: {err.strerror or err}") from None
        if len(buf) < FILE_HEADER.size:
            raise ZkFormatError(file, 0, f"truncated: {len(buf)} bytes, a log header needs {FILE_HEADER.size}")
        magic, version, self.dbid = FILE_HEADER.unpack_from(buf, 0)
        if magic != LOG_MAGIC:
            raise BadMagic(file, 0, f"bad magic {magic!r}, not a ZooKeeper transaction log (expected {LOG_MAGIC!r})")
        if version != LOG_VERSION:
            raise BadMagic(file, 4, f"unsupported transaction log version {version}")
        n = len(buf)
        pos = FILE_HEADER.size
        view = memoryview(buf)
        arr = np.frombuffer(buf, np.uint8)
        walk = kernels().walk_log
        kinds, type_base = BODY_TABLE
        found = np.empty((3, WALK_CHUNK), np.int64)  # offset, txn length, zxid of the valid entries
        used = None  # end of the non-zero bytes, found on the first stop
        while True:
            count, after = walk(arr, pos, kinds, type_base, found)
            pos = after
            i = self._next_wanted(found[2], 0, count)
            if i < count:
                offsets, lengths, zxids = found[:, :count].tolist()
            while i < count:
                at = offsets[i]
                try:
                    txn = decode_txn(view[at + LOG_FRAME.size : at + LOG_FRAME.size + lengths[i]], file, at)
                except ZkFormatError:  # the walk's check disagrees: the step below decides
                    pos = at
                    break
                yield txn
                i += 1
                if i < count and self._skipped(zxids[i]):
                    i = self._next_wanted(found[2], i, count)
            else:
                if count == WALK_CHUNK:
                    continue
            # the entry at pos: the end, or not valid
            stop = None  # (reason, partial?, end of what the entry announces)
            if pos + LOG_FRAME.size > n:
                if buf.count(0, pos) != n - pos:
                    stop = (f"partial entry header ({n - pos} bytes)", True, n)
                else:
                    self.end = LogEnd("eof", pos)
                    return
            else:
                crc, length = LOG_FRAME.unpack_from(buf, pos)
                body_end = pos + LOG_FRAME.size + length
                if length == 0:
                    used = _used(buf) if used is None else used
                    if used <= pos:
                        self.end = LogEnd("padding", pos)
                        return
                    stop = (f"zero txn length with {used - pos} bytes of data after it", False, pos)
                elif length < 0 or length > MAX_REASONABLE:
                    stop = (f"unreasonable txn length {length} ({n - pos - LOG_FRAME.size} bytes left)", False, pos)
                elif body_end + 1 > n:
                    stop = (f"partial last txn: {length} bytes announced, {n - pos - LOG_FRAME.size} left", True, n)
                elif buf[body_end] != 0x42:
                    stop = ("partial last txn: no end-of-record marker 'B'", True, body_end + 1)
                else:
                    data = view[pos + LOG_FRAME.size : body_end]
                    computed = zlib.adler32(data)
                    if (crc & 0xFFFFFFFFFFFFFFFF) != computed:
                        stop = (f"CRC mismatch: stored Adler32 {crc & 0xFFFFFFFFFFFFFFFF:#x}, computed {computed:#x}",
                                False, body_end + 1)
                    else:
                        try:
                            txn = decode_txn(data, file, pos)
                        except ZkFormatError as err:
                            stop = (f"undecodable txn: {err.reason}", False, body_end + 1)
                        else:  # valid after all (e.g. a multi inside a multi, which the walk leaves here)
                            if not self._skipped(txn.zxid):
                                yield txn
                            pos = body_end + 1
                            continue
            reason, partial, announced = stop
            used = _used(buf) if used is None else used
            resume = _resync(buf, pos + 1, used)
            raw = bytes(view[pos : min(announced if announced > pos else pos + 64, pos + RAW_MAX, n)])
            if resume is None:
                if partial and used <= announced:
                    self.end = LogEnd("partial", pos, reason, raw)
                else:
                    self.end = LogEnd("corrupt", pos, reason if not partial else reason.replace(
                        "partial last txn", "damaged txn") + f"; {used - pos} bytes of data from there, no valid txn",
                        raw)
                return
            if partial:
                reason = reason.replace("partial last txn", "damaged txn")
            yield Damage(file, pos, resume, f"{reason}; {resume - pos} bytes skipped to the next valid txn", raw)
            pos = resume


def _used(buf: bytes) -> int:
    """The end of the non-zero bytes (the pre-allocated zeros after a log's last txn excluded)."""
    arr = np.frombuffer(buf, np.uint8)
    end = len(arr)
    while end > 0:
        start = max(0, end - (1 << 20))
        chunk = arr[start:end]
        if chunk.max():
            return start + int(np.flatnonzero(chunk)[-1]) + 1
        end = start
    return 0


def _resync(buf: bytes, start: int, used: int) -> int | None:
    """The offset of the first valid entry at or after ``start`` (None if none). Linear: per
    position only numpy checks (the CRC's high 32 bits zero, a length that fits, 'B' after it);
    Adler32 and decoding only for the few positions that pass them."""
    arr = np.frombuffer(buf, np.uint8)
    n = len(arr)
    last = min(used, n) - LOG_FRAME.size - TXN_HEADER.size - 1  # the last offset an entry fits at
    s = start
    while s <= last:
        e = min(s + SCAN_CHUNK, last + 1)
        ok = (arr[s:e] | arr[s + 1 : e + 1] | arr[s + 2 : e + 2] | arr[s + 3 : e + 3]) == 0
        cand = np.flatnonzero(ok) + s
        if len(cand):
            length = ((arr[cand + 8].astype(np.int64) << 24) | (arr[cand + 9].astype(np.int64) << 16)
                      | (arr[cand + 10].astype(np.int64) << 8) | arr[cand + 11])
            end = cand + LOG_FRAME.size + length
            fits = (length >= TXN_HEADER.size) & (end < n)
            cand, end = cand[fits], end[fits]
            cand = cand[arr[end] == 0x42]
            for p in cand.tolist():
                if _valid_at(buf, p):
                    return p
        s = e
    return None


def _valid_at(buf: bytes, p: int) -> bool:
    crc, length = LOG_FRAME.unpack_from(buf, p)
    data = memoryview(buf)[p + LOG_FRAME.size : p + LOG_FRAME.size + length]
    if zlib.adler32(data) != crc:
        return False
    try:
        decode_txn(data, "", p)
    except ZkFormatError:
        return False
    return True

