"""Log start/end offsets of data-topic partitions from their segments' batch headers only
(no decompression, no CRC: the framing kernel of ``kernels.py`` with ``check_crc=False``),
or from a GetOffsetShell ``topic:partition:offset`` file; topic configs (retention) from a
``topic:config=value`` file (:func:`read_topic_configs`).

- start = base offset of the first batch of the first segment holding one. A magic 0/1
  compressed wrapper carries the offset of its LAST inner message; when such a wrapper opens
  a segment, the segment's file-name base offset (Kafka names a segment after the first offset
  it holds) is used instead, as nothing else is known without decompressing.
- end = last batch's base offset + lastOffsetDelta + 1 (magic 0/1: last message offset + 1).
- max timestamp = greatest batch maxTimestamp (magic 1: message timestamp; magic 0 has none).
- a partition with segments but no batch: start = end = base offset of its newest segment.
- every good batch header is kept (``headers``: the rows of ``batch_times.segment_rows``) for
  ``raw/batch_timestamps``.
- a batch whose offsets cannot hold (outside its segment's range, out of order: see
  ``kernels.check_offsets``) is quarantined and counts for nothing, like a corrupt header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipelines.errors import InputError
from pipelines.kafka import kernel_tables as K
from pipelines.kafka.batch_times import segment_rows
from pipelines.kafka.batches import ATTR_CODEC, framing_error, scan
from pipelines.kafka.paths import (
    base_offset_of,
    neighbours,
    offset_bounds,
    segment_files,
)
from pipelines.warehouse import quarantine

SOURCE = "log-end"  # of its raw/quarantine rows


@dataclass
class PartitionEnds:
    topic: str
    partition: int
    log_start_offset: int | None
    log_end_offset: int | None
    max_timestamp: int | None
    quarantine: list[dict] = field(default_factory=list)  # raw/quarantine rows
    batches: int = 0
    bytes: int = 0
    headers: list[np.ndarray] = field(default_factory=list)  # good batch rows per segment


def _map(path: Path) -> np.ndarray:
    try:
        if path.stat().st_size == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.memmap(path, dtype=np.uint8, mode="r")  # headers only: pages touched are few
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror or err})") from None


def scan_partition(topic: str, partition: int, d: Path) -> PartitionEnds | None:
    files = segment_files(d)
    if not files:
        return None
    out = PartitionEnds(topic, partition, None, None, None)
    for f, nxt, newest in neighbours(files):
        buf = _map(f)
        bounds = offset_bounds(base_offset_of(f), nxt, newest)
        bt = scan(buf, False, bounds)
        out.bytes += len(buf)
        for row in bt[bt[:, K.B_ERR] != K.OK]:
            where = quarantine.at(f, int(row[K.B_POS]))
            out.quarantine.append(quarantine.row(SOURCE, where, framing_error(row, bounds)))
        good = bt[bt[:, K.B_ERR] == K.OK]
        if not len(good):
            continue
        out.batches += len(good)
        out.headers.append(segment_rows(good, base_offset_of(f)))
        if out.log_start_offset is None:
            first = good[0]
            legacy_wrapper = first[K.B_MAGIC] < 2 and (first[K.B_ATTRS] & ATTR_CODEC) != 0
            name_base = base_offset_of(f)
            out.log_start_offset = int(name_base if legacy_wrapper and name_base >= 0 else first[K.B_BASE_OFFSET])
        out.log_end_offset = int(good[-1, K.B_LAST_OFFSET]) + 1
        ts = good[:, K.B_MAX_TS]
        ts = ts[ts >= 0]
        if len(ts):
            m = int(ts.max())
            out.max_timestamp = m if out.max_timestamp is None else max(out.max_timestamp, m)
    if out.log_end_offset is None:
        base = max(base_offset_of(f) for f in files)
        if base >= 0:
            out.log_start_offset = out.log_end_offset = base
    return out


_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")  # Kafka's legal topic names (Topic.validate)
_CONFIG = re.compile(r"^[a-z0-9._-]+$")


def _content_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, stripped line) of each line of a text file that is neither blank nor a
    ``#`` comment; an unreadable file is an InputError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read ({getattr(err, 'strerror', None) or err})") from None
    lines = ((n, line.strip()) for n, line in enumerate(text.splitlines(), 1))
    return [(n, line) for n, line in lines if line and not line.startswith("#")]


def read_topic_configs(path: Path) -> list[tuple[str, str, str, str]]:
    """(topic, config, value, ``file:line``) of each ``topic:config=value`` line (``orders:
    retention.ms=3600000``; a topic name holds no ``:``); blank lines and ``#`` comments skipped.
    A malformed line is an InputError naming file and line; a file without one line is too."""
    out = []
    for n, line in _content_lines(path):
        topic, colon, rest = line.partition(":")
        name, eq, value = rest.partition("=")
        topic, name, value = topic.strip(), name.strip(), value.strip()
        if not colon or not eq or not _TOPIC.match(topic) or not _CONFIG.match(name):
            raise InputError(f"{path}:{n}: expected topic:config=value (e.g. orders:retention.ms=3600000), "
                             f"got {line[:80]!r}")
        out.append((topic, name, value, f"{path}:{n}"))
    if not out:
        raise InputError(f"{path}: no topic:config=value line (expected topic configs)")
    return out


def read_offsets_file(path: Path) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of each ``topic:partition:offset`` line; blank lines and
    ``#`` comments skipped. A malformed line is an InputError naming file and line."""
    out = []
    for n, line in _content_lines(path):
        parts = line.rsplit(":", 2)
        if len(parts) != 3 or not parts[0]:
            raise InputError(f"{path}:{n}: expected topic:partition:offset, got {line[:80]!r}")
        topic, part, off = parts
        try:
            p, o = int(part), int(off)
        except ValueError:
            raise InputError(f"{path}:{n}: partition and offset must be integers, got {line[:80]!r}") from None
        if p < 0:
            raise InputError(f"{path}:{n}: negative partition {p}")
        out.append((topic, p, o))
    return out
