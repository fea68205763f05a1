"""ZooKeeper transaction logs (``version-2/log.<hex zxid of the first txn>``).

Grammar (``FileTxnLog``, ``Util.readTxnBytes``, ``SerializeUtils.deserializeTxn``; jute)::

    log      := header entry* [zero padding]
    header   := int magic "ZKLG" , int version (2) , long dbid
    entry    := long crc (Adler32 of txn) , int length , txn[length] , byte 'B'
    txn      := TxnHeader body [TxnDigest]
    TxnHeader := long clientId , int cxid , long zxid , long time , int type
    TxnDigest := int version , long treeDigest           (3.6+, when 12 bytes remain)

The log ends at end of file, at a zero length (pre-allocated padding) or at an entry without
its 'B' (a partial last write): ZooKeeper then moves to the next log. A CRC mismatch is
corruption: reading stops there and the caller quarantines the entry.

Bodies are data: :data:`BODIES` gives, per txn type, its name and field table (the records
of ``zookeeper.jute``, package ``org.apache.zookeeper.txn``); one decoder reads them all.
A field marked optional may be absent at the end of the body (``CreateTxnV0`` has no
parentCVersion; ``closeSession`` has no path list before 3.6).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path

from pipelines.zookeeper.errors import BadMagic, ZkFormatError
from pipelines.zookeeper.jute import FILE_HEADER, LOG_FRAME, TXN_DIGEST, TXN_HEADER, Reader

LOG_MAGIC = b"ZKLG"
LOG_VERSION = 2

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
    """Iterates the txns of one log file; ``end`` tells how the reading stopped."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.file = str(path)
        self.end: LogEnd | None = None
        self.dbid: int | None = None

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
        while True:
            if pos + LOG_FRAME.size > n:
                tail = bytes(view[pos:])
                kind = "eof" if not tail.strip(b"\0") else "partial"
                self.end = LogEnd(kind, pos, "" if kind == "eof" else f"partial entry header ({n - pos} bytes)")
                return
            crc, length = LOG_FRAME.unpack_from(buf, pos)
            if length == 0:
                self.end = LogEnd("padding", pos)
                return
            body_end = pos + LOG_FRAME.size + length
            if length < 0:
                self.end = LogEnd("corrupt", pos, f"negative txn length {length}", bytes(view[pos : pos + 64]))
                return
            if body_end + 1 > n:
                self.end = LogEnd("partial", pos, f"partial last txn: {length} bytes announced, {n - pos - 12} left")
                return
            if buf[body_end] != 0x42:
                self.end = LogEnd("partial", pos, "partial last txn: no end-of-record marker 'B'")
                return
            data = view[pos + LOG_FRAME.size : body_end]
            computed = zlib.adler32(data)
            if (crc & 0xFFFFFFFFFFFFFFFF) != computed:
                self.end = LogEnd(
                    "corrupt", pos, f"CRC mismatch: stored Adler32 {crc & 0xFFFFFFFFFFFFFFFF:#x}, computed {computed:#x}",
                    bytes(data),
                )
                return
            try:
                txn = decode_txn(data, file, pos)
            except ZkFormatError as err:
                self.end = LogEnd("corrupt", pos, f"undecodable txn: {err.reason}", bytes(data))
                return
            yield txn
            pos = body_end + 1
