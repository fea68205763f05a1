"""Which files an extract reads: Kafka log dirs, partition dirs and single segments.

A Kafka log dir holds one directory per partition, ``<topic>-<partition>`` (topic names may
contain '-'; ``-delete``/``-future``/``-stray`` suffixed dirs are not live partitions and do
not match). Segments are ``<baseOffset:020d>.log`` and are read in base-offset order.

A single ``.log`` file takes its ``__consumer_offsets`` partition from its parent dir's name;
when the parent is not ``__consumer_offsets-N`` the partition is unknowable (the topic's
partition count is not in the file), so ``offsets_partition`` is -1 and the file is its own
transaction scope (it cannot be ordered against segments of other files).

A segment's file name bounds its offsets: ``[its base offset, the next segment's base offset)``,
and at most ``base + 2**31 - 1`` (``kernels.check_offsets``); the newest segment of a partition
dir (never compacted) starts at its base offset.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import InputError
from pipelines.kafka.kernel_tables import MAX_RELATIVE_OFFSET, NO_OFFSET_LIMIT
from pipelines.kafka.topics import NOT_DATA_TOPICS, OFFSETS_TOPIC

PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
UNKNOWN_PARTITION = -1


@dataclass(frozen=True)
class Segment:
    path: Path
    partition: int  # __consumer_offsets partition, -1 when not derivable
    scope: str  # transaction scope: the partition dir, or the file itself
    base_offset: int  # from the file name; -1 when the name is not a number
    next_base: int = -1  # base offset of the next segment of its partition dir; -1 none/unknown
    newest: bool = False  # the last segment of its partition dir

    @property
    def bounds(self) -> tuple[int, int, bool]:
        return offset_bounds(self.base_offset, self.next_base, self.newest)


def base_offset_of(path: Path) -> int:
    stem = path.name[: -len(".log")] if path.name.endswith(".log") else path.stem
    return int(stem) if stem.isdigit() else -1


def offset_bounds(base: int, next_base: int, newest: bool) -> tuple[int, int, bool]:
    """(lowest offset, first offset past the segment, newest) of a segment named ``base``."""
    if base < 0:
        return (0, next_base if next_base >= 0 else NO_OFFSET_LIMIT, False)
    hi = base + MAX_RELATIVE_OFFSET + 1
    return (base, min(hi, next_base) if next_base > base else hi, newest)


def neighbours(files: list[Path]) -> list[tuple[Path, int, bool]]:
    """(file, next segment's base offset, is the newest) of a partition dir's sorted segments."""
    out = []
    for i, f in enumerate(files):
        nxt = base_offset_of(files[i + 1]) if i + 1 < len(files) else -1
        out.append((f, nxt, i + 1 == len(files) and base_offset_of(f) >= 0))
    return out


def _check_dir(d: Path) -> None:
    if not os.access(d, os.R_OK | os.X_OK):
        raise InputError(f"{d}: cannot read directory (permission denied)")


def partition_dirs(root: Path) -> list[tuple[str, int, Path]]:
    """(topic, partition, dir) of the partition dirs directly under a log dir."""
    _check_dir(root)
    out = []
    for child in sorted(root.iterdir()):
        m = PARTITION_DIR.match(child.name)
        if m and child.is_dir():
            out.append((m["topic"], int(m["partition"]), child))
    return out


def segment_files(d: Path) -> list[Path]:
    _check_dir(d)
    files = [f for f in d.iterdir() if f.name.endswith(".log") and f.is_file()]
    return sorted(files, key=lambda f: (base_offset_of(f) < 0, base_offset_of(f), f.name))


def _exists(p: Path) -> Path:
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    return p


def _replica_extent(files: list[Path]) -> tuple[int, int]:
    """How far a replica's log goes: (last segment's base offset, its size)."""
    if not files:
        return (-1, -1)
    return (base_offset_of(files[-1]), files[-1].stat().st_size)


def offsets_segments(paths: list[Path]) -> list[Segment]:
    """Every ``__consumer_offsets`` segment under ``paths``, grouped by scope, in log order.

    When several log dirs hold the same partition (replicas on several brokers, or a copy of
    the data dirs of a whole cluster), one replica is read, the one whose log goes furthest:
    decoding every replica would count each commit once per broker."""
    segs: dict[Path, Segment] = {}
    replicas: dict[int, dict[Path, list[Path]]] = {}
    for p in map(Path, paths):
        _exists(p)
        if p.is_dir():
            m = PARTITION_DIR.match(p.name)
            if m and m["topic"] == OFFSETS_TOPIC:
                dirs = [(int(m["partition"]), p)]
            else:
                dirs = [(n, d) for t, n, d in partition_dirs(p) if t == OFFSETS_TOPIC]
            found = 0
            for n, d in dirs:
                files = replicas.setdefault(n, {}).setdefault(d.resolve(), segment_files(d))
                found += len(files)
            if not found:
                raise InputError(f"{p}: no {OFFSETS_TOPIC} segments "
                                 f"(expected a Kafka log dir, {OFFSETS_TOPIC}-N dirs or .log files)")
        elif p.is_file():
            if not p.name.endswith(".log"):
                raise InputError(f"{p}: not a Kafka log segment (expected a .log file)")
            if not os.access(p, os.R_OK):
                raise InputError(f"{p}: cannot read file (permission denied)")
            m = PARTITION_DIR.match(p.parent.name)
            if m and m["topic"] == OFFSETS_TOPIC:
                _, nxt, newest = next(x for x in neighbours(segment_files(p.parent)) if x[0].name == p.name)
                seg = Segment(p, int(m["partition"]), str(p.parent.resolve()), base_offset_of(p), nxt, newest)
            else:
                seg = Segment(p, UNKNOWN_PARTITION, str(p.resolve()), base_offset_of(p))
            segs.setdefault(p.resolve(), seg)
        else:
            raise InputError(f"{p}: not a file or directory")
    for n, dirs in replicas.items():
        d, files = max(dirs.items(), key=lambda item: (_replica_extent(item[1]), str(item[0])))
        for f, nxt, newest in neighbours(files):
            segs.setdefault(f.resolve(), Segment(f, n, str(d), base_offset_of(f), nxt, newest))
    return sorted(segs.values(), key=lambda s: (s.scope, s.base_offset < 0, s.base_offset, s.path.name))


def data_partition_dirs(paths: list[Path]) -> list[tuple[str, int, Path]]:
    """Data-topic partition dirs under ``paths`` (log dirs or partition dirs), Kafka's own
    logs (``NOT_DATA_TOPICS``) skipped. A log dir holding no data topic is an error only when
    no path holds one: among the log dirs of a cluster, a broker may host none (every data
    replica reassigned away, only ``__consumer_offsets`` and ``-delete`` dirs left)."""
    out, empty = [], []
    for p in map(Path, paths):
        _exists(p)
        if not p.is_dir():
            raise InputError(f"{p}: not a directory (expected a Kafka log dir or a topic-partition dir)")
        m = PARTITION_DIR.match(p.name)
        if m and any(f.name.endswith(".log") for f in p.iterdir()):
            found = [(m["topic"], int(m["partition"]), p)]
        else:
            found = partition_dirs(p)
        found = [x for x in found if x[0] not in NOT_DATA_TOPICS]
        if not found:
            empty.append(p)
        out.extend(found)
    if empty and not out:
        raise InputError(f"{empty[0]}: no topic-partition dirs of data topics "
                         "(expected a Kafka log dir or <topic>-<N> dirs)")
    return out
