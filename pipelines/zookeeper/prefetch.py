"""The snapshot file of ``kaudit extract zk-snapshot FILE|DATADIR``, mapped while the process
still imports its modules (:mod:`pipelines.startup` calls :func:`start` before numpy and pyarrow
are imported; the standard library and :mod:`pipelines.argv` only). Of a data dir, its newest
snapshot: the one :func:`pipelines.zookeeper.datadir.read_dir` reads first (with ``--at-zxid``,
none).

A thread maps the file with its pages in place (``MAP_POPULATE``: no page fault per 4 KiB when
the node records are walked) and computes the Adler32 of all but its last :data:`TAIL` bytes:
the snapshot seal covers every byte before it, and the seal is within the last
:data:`TAIL` bytes of a snapshot (``pipelines.zookeeper.snapshot``), so :func:`sealed` only adds
the few bytes between. Both release the GIL: they run beside the imports (~0.05 s of 1M
znodes, on a second core when there is one).

Only a hint: :func:`mapped` hands the map over only for that same file (device, inode, size
and modification time unchanged since it was mapped), and anything that goes wrong here (an
unreadable file, a compressed snapshot, options this module does not know) just
means no prefetch: :func:`pipelines.zookeeper.snapshot.read_bytes` then reads the file itself
and reports what it finds.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import threading
import zlib

from pipelines.argv import split_global_options

SNAP_MAGIC = b"ZKSN"  # an uncompressed snapshot (pipelines.zookeeper.snapshot.SNAP_MAGIC)
TAIL = 256  # bytes after the node records: seal 13, digest and last zxid with their seals 54
# zk-snapshot's own options (declared by its command in pipelines.cli; a unit test holds these
# names to it): any other option (--help, one added later) means no prefetch
AT_ZXID = "--at-zxid"
VALUE_OPTIONS = frozenset({AT_ZXID, "--chroot"})
SNAPSHOT_NAME = re.compile(r"^snapshot\.([0-9a-fA-F]+)(\.gz|\.snappy)?$")  # (snapshot.zxid_of)

_current: _Prefetch | None = None


def snapshot_argument(args: list[str]) -> str | None:
    """FILE of ``[options] extract zk-snapshot FILE [options]``, else None (also with
    ``--at-zxid``: a data dir's snapshot is then chosen by the target)."""
    _, rest = split_global_options(args)
    positional: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            positional += rest[i + 1 :]
            break
        if arg.startswith("-"):
            name = arg.split("=", 1)[0]
            if name not in VALUE_OPTIONS or name == AT_ZXID:
                return None
            i += 1 if "=" in arg else 2
            continue
        positional.append(arg)
        i += 1
    if len(positional) != 3 or positional[:2] != ["extract", "zk-snapshot"]:
        return None
    return positional[2]


def start(args: list[str]) -> None:
    """Map the snapshot file named by the command line ``args`` on a thread, if it names one."""
    global _current
    path = snapshot_argument(args)
    if path is not None and _current is None:
        _current = _Prefetch(path)


def _identity(st: os.stat_result) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class _Prefetch(threading.Thread):
    def __init__(self, path: str):
        super().__init__(name="snapshot-prefetch", daemon=True)
        self.path = path
        self.map: mmap.mmap | None = None
        self.identity: tuple | None = None
        self.prefix = 0  # self.adler: Adler32 of map[:prefix]
        self.adler: int | None = None
        self.mapped = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            path = _snapshot_file(self.path)
            if path is None:
                return
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_size > TAIL and f.read(len(SNAP_MAGIC)) == SNAP_MAGIC:
                    self.map = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE,
                                         prot=mmap.PROT_READ)
                    self.identity = _identity(st)
        except (OSError, ValueError, AttributeError):  # AttributeError: no MAP_POPULATE here
            self.map = None
        finally:
            self.mapped.set()
        if self.map is not None:
            self.prefix = len(self.map) - TAIL
            self.adler = zlib.adler32(memoryview(self.map)[: self.prefix])


def _snapshot_file(path: str) -> str | None:
    """``path`` if a regular file (a FIFO would block the open), else the newest snapshot of
    the data dir ``path`` (or of its ``version-2/``) if uncompressed, else None."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return path
    if not stat.S_ISDIR(mode):
        return None
    sub = os.path.join(path, "version-2")
    d = sub if os.path.isdir(sub) else path
    newest = max(((int(m.group(1), 16), name, m.group(2)) for name in os.listdir(d)
                  if (m := SNAPSHOT_NAME.match(name))), default=None)
    if newest is None or newest[2]:
        return None
    file = os.path.join(d, newest[1])
    return file if stat.S_ISREG(os.stat(file).st_mode) else None


def mapped(path) -> mmap.mmap | None:
    """The map of ``path`` made on the way in, if it is that file, unchanged."""
    p = _current
    if p is None:
        return None
    p.mapped.wait()
    if p.map is None:
        return None
    try:
        same = _identity(os.stat(path)) == p.identity
    except OSError:
        return None
    return p.map if same else None


def sealed(buf, end: int) -> int | None:
    """``zlib.adler32(buf[:end])`` from the one computed on the way in, when ``buf`` is the
    prefetched map and ``end`` within its last :data:`TAIL` bytes; else None."""
    p = _current
    if p is None or buf is not p.map or end < p.prefix:
        return None
    p.join()
    if p.adler is None:
        return None
    return zlib.adler32(memoryview(buf)[p.prefix : end], p.adler)
