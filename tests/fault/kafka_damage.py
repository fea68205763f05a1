"""Seeded damage of a clean Kafka log dir, for the fault tests and ``sweep_kafka.py``.

:func:`clean_logs` writes a log dir with kafka-python's builders (``testkit/segments.py``)
and returns what it wrote: per file, each batch's byte range, offsets and the rows it must give
(offset commits and group metadata of two ``__consumer_offsets`` partitions of two segments
each, every codec, one segment opening with magic-1 messages; two partitions of a data topic
``orders`` for ``extract log-end``). :func:`damage` copies it and damages one file in one way
(truncation, bit flip, overwritten length / record count / base offset, unknown magic or
attributes, garbage, a compression bomb), and says which batches it touched. Expected results
come from this knowledge only: every row of an untouched batch must be in the tables, every row
in the tables must be a row written here, and the damage must be named in raw/quarantine.

The one damage no check can see is named too (:attr:`Case.undetectable`): the base offset of a
segment's last batch raised to offsets no other batch holds, inside the segment's range (the
base offset is outside Kafka's CRC, and nothing else in the file says where the batch was).
"""

from __future__ import annotations

import random
import shutil
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import crc32c

from pipelines.warehouse.reading import read_arrow
from testkit.segments import (
    CODECS,
    _v2_finish,
    batch,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

if TYPE_CHECKING:
    from pipelines.warehouse.warehouse import Warehouse

T0 = 1_700_000_000_000
OFFSETS_PARTITIONS = (3, 17)
DATA_PARTITIONS = (0, 1)
MAGIC2_CODECS = ["none", "gzip", "snappy", "lz4", "zstd", "none", "snappy-plain"]
KINDS = ("truncate", "bitflip", "length", "count", "count_crc", "base_offset", "magic", "attributes_crc",
         "garbage_insert", "garbage_overwrite", "ones", "bomb")


@dataclass
class Batch:
    pos: int
    size: int
    first: int
    last: int
    rows: list[tuple] = field(default_factory=list)  # expected rows: ("commit", ...) / ("group", ...)


@dataclass
class SegmentFile:
    rel: str  # path relative to the log dir
    topic: str
    partition: int
    batches: list[Batch]


@dataclass
class Layout:
    files: list[SegmentFile]

    def rows(self) -> set[tuple]:
        return {r for f in self.files for b in f.batches for r in b.rows}

    def ends(self) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) of each data partition."""
        out = {}
        for f in self.files:
            if f.topic == "orders" and f.batches:
                lo, hi = out.get((f.topic, f.partition), (None, None))
                first, last = f.batches[0].first, f.batches[-1].last + 1
                out[(f.topic, f.partition)] = (first if lo is None else min(lo, first),
                                               last if hi is None else max(hi, last))
        return out


@dataclass
class Case:
    seed: int
    kind: str
    file: SegmentFile
    at: int  # byte of the damage in the damaged file
    damaged: set[int]  # indexes of the batches of ``file`` it touched
    undetectable: bool = False
    note: str = ""

    def good_rows(self, layout: Layout) -> set[tuple]:
        """Rows of every batch the damage did not touch."""
        return {r for f in layout.files for i, b in enumerate(f.batches)
                if not (f is self.file and i in self.damaged) for r in b.rows}

    def ends_bounds(self, layout: Layout) -> dict[tuple[str, int], tuple[int, int, int, int]]:
        """Per data partition: log start within [lo, hi], log end within [lo, hi], from the
        batches left untouched (a touched one may still be read, with its true offsets)."""
        out = {}
        for key, (start, end) in layout.ends().items():
            files = [f for f in layout.files if (f.topic, f.partition) == key]
            good = [b for f in files for i, b in enumerate(f.batches) if not (f is self.file and i in self.damaged)]
            min_end = max((b.last + 1 for b in good), default=start)
            max_start = min((b.first for b in good), default=end)
            out[key] = (start, max_start, min_end, end)
        return out


def _commit_rows(part: int, base: int, n: int, rng: random.Random) -> tuple[list, list[tuple]]:
    recs, rows = [], []
    for i in range(n):
        g, t, p = f"group-{rng.randrange(5)}", f"topic.{rng.randrange(3)}", rng.randrange(8)
        off, ts = rng.randrange(1 << 40), T0 + rng.randrange(10**9)
        if rng.random() < 0.15:
            gen = rng.randrange(1, 100)
            v = group_metadata_value(generation=gen, protocol="range", leader="m", state_ts=ts, members=[])
            recs.append((group_metadata_key(g), v))
            rows.append(("group", part, base + i, g, gen))
        else:
            recs.append((offset_commit_key(g, t, p), offset_commit_value(off, commit_ts=ts, metadata=f"m{i}")))
            rows.append(("commit", part, base + i, g, t, p, off, ts))
    return recs, rows


def _write(root: Path, rel: str, topic: str, partition: int, parts: list[tuple[bytes, int, int, list]]) -> SegmentFile:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    batches, pos = [], 0
    for data, first, last, rows in parts:
        batches.append(Batch(pos, len(data), first, last, rows))
        pos += len(data)
    path.write_bytes(b"".join(p[0] for p in parts))
    return SegmentFile(rel, topic, partition, batches)


def clean_logs(root: Path, seed: int = 0, batches_per_segment: int = 12) -> Layout:
    rng = random.Random(seed)
    files = []
    for part in OFFSETS_PARTITIONS:
        offset = 0
        for s in range(2):
            base, parts = offset, []
            if part == OFFSETS_PARTITIONS[0] and s == 0:  # an upgraded cluster: magic-1 messages first
                for codec in ("none", "gzip"):
                    recs, rows = _commit_rows(part, offset, 2, rng)
                    if codec == "none":  # one top-level message per record
                        for j, (rec, row) in enumerate(zip(recs, rows, strict=True)):
                            parts.append((batch([rec], base_offset=offset + j, magic=1, timestamp_ms=T0),
                                          offset + j, offset + j, [row]))
                    else:
                        parts.append((batch(recs, base_offset=offset, magic=1, codec=codec, timestamp_ms=T0),
                                      offset, offset + 1, rows))
                    offset += 2
            for j in range(batches_per_segment):
                n = rng.randint(1, 6)
                recs, rows = _commit_rows(part, offset, n, rng)
                codec = MAGIC2_CODECS[j % len(MAGIC2_CODECS)]
                parts.append(
                    (batch(recs, base_offset=offset, codec=codec, timestamp_ms=T0), offset, offset + n - 1, rows)
                )
                offset += n
            files.append(
                _write(root, f"__consumer_offsets-{part}/{segment_name(base)}", "__consumer_offsets", part, parts)
            )
    for part in DATA_PARTITIONS:
        offset = 0
        for _ in range(2):
            base, parts = offset, []
            for j in range(batches_per_segment):
                n = rng.randint(1, 30)
                recs = [(b"k%d" % i, struct.pack(">qq", rng.randrange(1 << 20), i) + b"v" * rng.randrange(30))
                        for i in range(n)]
                codec = ("none", "zstd", "lz4")[j % 3]
                parts.append(
                    (batch(recs, base_offset=offset, codec=codec, timestamp_ms=T0 + offset), offset, offset + n - 1, [])
                )
                offset += n
            files.append(_write(root, f"orders-{part}/{segment_name(base)}", "orders", part, parts))
    return Layout(files)


def bomb_batch(template: bytes, codec: str, zeros: int) -> bytes:
    """``template`` (a magic-2 batch) with its records replaced by ``zeros`` zero bytes
    compressed with ``codec`` (gzip or zstd), the CRC fixed: kafka-python accepts it. zstd is
    one frame; gzip is members of 16 MiB each (as GZIPInputStream reads them), compressed once."""
    header = bytearray(template[:61])
    chunk = bytes(16 << 20)
    assert zeros % len(chunk) == 0
    if codec == "zstd":
        import zstandard

        c = zstandard.ZstdCompressor(level=1).compressobj()
        body = b"".join(c.compress(chunk) for _ in range(zeros // len(chunk))) + c.flush()
    else:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        body = (c.compress(chunk) + c.flush()) * (zeros // len(chunk))
    base = struct.unpack_from(">q", header, 0)[0]
    attributes = (struct.unpack_from(">h", header, 21)[0] & ~0x07) | CODECS[codec]
    return _v2_finish(bytearray(header + body), base_offset=base, attributes=attributes)


def _fix_crc(data: bytearray, pos: int, size: int) -> None:
    struct.pack_into(">I", data, pos + 17, crc32c.crc32c(bytes(data[pos + 21 : pos + size])))


def _hit(f: SegmentFile, start: int, end: int) -> set[int]:
    return {i for i, b in enumerate(f.batches) if b.pos < end and start < b.pos + b.size}


def damage(layout: Layout, clean: Path, out: Path, seed: int, kind: str | None = None) -> Case:
    """Copy the log dir ``clean`` to ``out`` and damage one of its files (seeded)."""
    rng = random.Random(seed)
    kind = kind or rng.choice(KINDS)
    shutil.copytree(clean, out)
    f = rng.choice(layout.files)
    path = out / f.rel
    data = bytearray(path.read_bytes())
    i = rng.randrange(len(f.batches))
    b = f.batches[i]
    case = Case(seed, kind, f, b.pos, {i})
    v2 = data[b.pos + 16] == 2
    if kind == "truncate":
        cut = rng.randrange(1, len(data))
        del data[cut:]
        case.at, case.damaged = cut, {j for j, x in enumerate(f.batches) if x.pos + x.size > cut}
        case.at = max((x.pos for x in f.batches if x.pos <= cut), default=0)
    elif kind == "bitflip":
        p = b.pos + rng.randrange(b.size)
        data[p] ^= 1 << rng.randrange(8)
        case.note = f"byte {p - b.pos} of the batch"
        if p - b.pos < 8:
            case.undetectable = _invisible(
                layout, f, i, struct.unpack_from(">q", data, b.pos)[0], _wrapper(data, b.pos)
            )
    elif kind == "length":
        value = rng.choice(
            [-1, 0, 7, 1 << 30, 0x7FFFFFFF, b.size - 12 + rng.choice([-3, -1, 1, 5]), rng.randrange(1 << 31)]
        )
        struct.pack_into(">i", data, b.pos + 8, value)
        case.note = f"length {value}"
    elif kind in ("count", "count_crc"):
        if not v2:
            return damage(layout, clean, _fresh(out), seed + 10_000, kind)
        value = rng.choice([0, -1, 1 << 30, struct.unpack_from(">i", data, b.pos + 57)[0] + rng.choice([-1, 1, 2])])
        struct.pack_into(">i", data, b.pos + 57, value)
        if kind == "count_crc":
            _fix_crc(data, b.pos, b.size)
        case.note = f"recordCount {value}"
    elif kind == "base_offset":
        old = struct.unpack_from(">q", data, b.pos)[0]
        value = rng.choice(
            [old ^ (1 << rng.randrange(63)), old + rng.choice([-2, -1, 1, 3]), rng.randrange(1 << 62), 0]
        )
        struct.pack_into(">q", data, b.pos, value)
        case.note = f"baseOffset {old} -> {value}"
        case.undetectable = _invisible(layout, f, i, value, _wrapper(data, b.pos))
    elif kind == "magic":
        data[b.pos + 16] = rng.choice([3, 4, 0x7F, 0xFF])
    elif kind == "attributes_crc":
        if not v2:
            return damage(layout, clean, _fresh(out), seed + 10_000, kind)
        struct.pack_into(">h", data, b.pos + 21, rng.choice([0x0005, 0x0006, 0x0007, 0x0080, 0x4000, -1]))
        _fix_crc(data, b.pos, b.size)
    elif kind == "garbage_insert":  # between two batches: nothing is damaged
        junk = rng.randbytes(rng.randrange(1, 3000))
        data[b.pos : b.pos] = junk
        case.damaged = set()
        case.note = f"{len(junk)} bytes inserted"
    elif kind == "garbage_overwrite":
        n = rng.randrange(1, 2 * b.size)
        p = b.pos + rng.randrange(b.size)
        data[p : p + n] = rng.randbytes(min(n, len(data) - p))
        case.at, case.damaged = b.pos, _hit(f, p, p + n)
    elif kind == "ones":  # a whole file of 0x01 bytes
        data = bytearray(b"\x01" * len(data))
        case.at, case.damaged = 0, set(range(len(f.batches)))
    elif kind == "bomb":
        if not v2:
            return damage(layout, clean, _fresh(out), seed + 10_000, kind)
        bomb = bomb_batch(bytes(data[b.pos : b.pos + b.size]), rng.choice(["gzip", "zstd"]), 64 << 20)
        data[b.pos : b.pos + b.size] = bomb
        case.note = "64 MiB of zeros"
    else:
        raise ValueError(kind)
    path.write_bytes(bytes(data))
    return case


def _wrapper(data: bytearray, pos: int) -> bool:
    return data[pos + 16] < 2 and data[pos + 17] & 7 != 0


def _fresh(out: Path) -> Path:
    shutil.rmtree(out)
    return out


def _invisible(layout: Layout, f: SegmentFile, i: int, new_base: int, wrapper: bool) -> bool:
    """Is batch ``i`` of ``f`` with base offset field ``new_base`` indistinguishable from a
    clean batch? Only when its new offsets stay inside the segment's range (file-name base up
    to base + 2**31 and the next segment's base), between those of its neighbours, and it is
    not the newest segment's first batch (which starts at the file-name base). A legacy
    wrapper's field is its last offset."""
    b = f.batches[i]
    first = new_base - (b.last - b.first) if wrapper else new_base
    last = first + (b.last - b.first)
    if first == b.first:
        return False  # nothing changed that a reader uses
    name = f.batches[0].first
    later = [g.batches[0].first for g in layout.files
             if (g.topic, g.partition) == (f.topic, f.partition) and g.batches[0].first > name]
    hi = min([name + 2**31, *later])
    if first < name or last >= hi:
        return False
    if i and first <= f.batches[i - 1].last:
        return False
    if i + 1 < len(f.batches) and last >= f.batches[i + 1].first:
        return False
    return not (i == 0 and not later)


# --- what the tests and the sweep read back --------------------------------------------------


def table_rows(w: Warehouse, run: str) -> list[tuple]:
    """The rows of raw/offset_commits and raw/group_metadata, in the form kafka_damage writes."""
    rows = []
    for r in read_arrow(w, "raw/offset_commits", run).to_pylist():
        ts = int(r["commit_timestamp"].timestamp() * 1000)
        rows.append(("commit", r["offsets_partition"], r["log_offset"], r["group_id"], r["topic"], r["partition"],
                     r["committed_offset"], ts))
    for r in read_arrow(w, "raw/group_metadata", run).to_pylist():
        rows.append(("group", r["offsets_partition"], r["log_offset"], r["group_id"], r["generation"]))
    return rows


def harmless(case, data: bytes) -> bool:
    """Damage no reader needs to see: a magic-2 batch's partitionLeaderEpoch (outside the CRC,
    unused here) or attribute bits no version defines."""
    if case.kind == "bitflip" and case.note.startswith("byte "):
        at = int(case.note.split()[1])
        return data[case.file.batches[min(case.damaged)].pos + 16] == 2 and 12 <= at < 16
    return case.kind == "attributes_crc" and data[case.at + 22] & 0x07 == 0


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# Batches per partition of :func:`big_offsets_dir` for the kill -9 cases: 4 x 60,000 batches of
# 20 commits (4.8M records, 228 MB) keep ``extract offsets --workers 2`` decoding for about a
# second on the 2-core machine. 6,000 (23 MB) took 0.39 s in all, most of it the process's start:
# a CI run saw the CLI finish between the test seeing its pool and the kill.
KILL_BATCHES = 60_000


def big_offsets_dir(root: Path, partitions: int = 4, batches: int = 3000) -> Path:
    """Partitions of many copies of one batch of 20 commits (kafka-python), base offsets
    rewritten (outside the CRC), ``batches`` per partition (``KILL_BATCHES`` to be killed mid-decode)."""
    one = batch([(offset_commit_key(f"g{i}", "t", i), offset_commit_value(i, commit_ts=T0)) for i in range(20)],
                base_offset=0, timestamp_ms=T0)
    for p in range(partitions):
        data = bytearray(one * batches)
        for i in range(batches):
            struct.pack_into(">q", data, i * len(one), 20 * i)
        write_segment(root / f"__consumer_offsets-{p}" / segment_name(0), [bytes(data)])
    return root
