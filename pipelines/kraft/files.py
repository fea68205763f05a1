"""Which files ``kaudit extract kraft`` reads: a KRaft metadata log dir (``__cluster_metadata-0/``
or a log dir holding it) or single files (``docs/formats.md`` section 7).

- segments ``<20-digit base offset>.log``, read in base-offset order;
- snapshots ``<20-digit end offset, exclusive>-<10-digit epoch>.checkpoint``;
- skipped: ``*.checkpoint.part`` (a snapshot being written), ``*.deleted``, indexes,
  ``quorum-state``, and ``00000000000000000000-0000000000.checkpoint`` (holds no metadata).

The cluster id comes from ``meta.properties`` (``cluster.id=``) of the log dir that holds the
metadata partition dir, when there is one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.errors import InputError

METADATA_DIR = "__cluster_metadata-0"
SEGMENT = re.compile(r"^(\d{20})\.log$")
SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
EMPTY_SNAPSHOT = "00000000000000000000-0000000000.checkpoint"
EXPECTED = ("a KRaft metadata log "
            "(__cluster_metadata-0/ with <offset>.log segments or <offset>-<epoch>.checkpoint snapshots)")


@dataclass(frozen=True)
class Snapshot:
    path: Path
    end_offset: int  # exclusive: the snapshot holds the state of offsets < end_offset
    epoch: int


@dataclass
class MetadataFiles:
    segments: list[Path] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)  # by end offset
    cluster_id: str | None = None


def _readable(p: Path) -> Path:
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    if not os.access(p, os.R_OK | (os.X_OK if p.is_dir() else 0)):
        raise InputError(f"{p}: permission denied")
    return p


def _cluster_id(log_dir: Path) -> str | None:
    props = log_dir / "meta.properties"
    if not props.is_file():
        return None
    for line in props.read_text(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "cluster.id":
            return value.strip() or None
    return None


def _add(found: MetadataFiles, f: Path) -> bool:
    """Adds a segment or snapshot; False for any other file (the empty snapshot is skipped)."""
    if SEGMENT.match(f.name):
        found.segments.append(f)
        return True
    m = SNAPSHOT.match(f.name)
    if m:
        if f.name != EMPTY_SNAPSHOT:
            found.snapshots.append(Snapshot(f, int(m[1]), int(m[2])))
        return True
    return False


def metadata_files(paths: list[Path]) -> MetadataFiles:
    """The segments and snapshots under ``paths``; an :class:`InputError` for a path that holds none."""
    found = MetadataFiles()
    for p in map(Path, paths):
        _readable(p)
        if p.is_dir():
            d = p / METADATA_DIR if (p / METADATA_DIR).is_dir() else p
            _readable(d)
            before = len(found.segments) + len(found.snapshots)
            for f in sorted(d.iterdir()):
                if f.is_file():
                    _add(found, f)
            if len(found.segments) + len(found.snapshots) == before:
                raise InputError(f"{p}: no metadata segments or snapshots found (expected {EXPECTED})")
            found.cluster_id = found.cluster_id or _cluster_id(d.parent)
        elif p.is_file():
            if p.name == EMPTY_SNAPSHOT:
                raise InputError(f"{p}: the empty bootstrap snapshot holds no metadata (expected {EXPECTED})")
            if not _add(found, p):
                raise InputError(f"{p}: not a metadata segment or snapshot (expected {EXPECTED})")
            if p.parent.name == METADATA_DIR:
                found.cluster_id = found.cluster_id or _cluster_id(p.parent.parent)
        else:
            raise InputError(f"{p}: not a file or directory")
    found.segments = sorted(set(found.segments), key=lambda f: (int(f.name[:20]), str(f)))
    found.snapshots = sorted(set(found.snapshots), key=lambda s: (s.end_offset, s.epoch, str(s.path)))
    return found
