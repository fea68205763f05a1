"""The data records of one log segment, one by one, for the decoders of the small internal
topics (MirrorMaker's offset syncs and checkpoints): the numba batch walk
(:func:`pipelines.kafka.batches.walk_segment`), its control batches left out."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipelines.kafka import kernel_tables as K
from pipelines.kafka.batches import ATTR_CONTROL, walk_segment
from pipelines.kafka.segment import read_bytes


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    offset: int  # the record's log offset
    batch_timestamp: int  # its batch's base timestamp, epoch ms
    position: int  # the record's byte position in the segment file


@dataclass(frozen=True)
class SegmentRecords:
    records: list[Record]
    bad: list[tuple[int, object, bytes | None]]  # (byte position, error, raw bytes) of the walk
    good_batches: int


def segment_records(path: Path) -> SegmentRecords:
    """Every non-control record of the segment ``path``, in file order."""
    walk = walk_segment(read_bytes(path))
    return SegmentRecords(list(_records(walk)), list(walk.bad), walk.good_batches)


def _records(walk) -> Iterator[Record]:
    recs, bt = walk.records, walk.batches
    if not len(recs):
        return
    buf = walk.buf.tobytes()
    brow = walk.region_batch[recs[:, K.C_REGION]]
    control = (bt[brow, K.B_ATTRS] & ATTR_CONTROL) != 0
    for i in np.flatnonzero(~control):
        r = recs[i]
        kl, vl = int(r[K.C_KEY_LEN]), int(r[K.C_VAL_LEN])
        yield Record(None if kl < 0 else buf[r[K.C_KEY_POS] : r[K.C_KEY_POS] + kl],
                     None if vl < 0 else buf[r[K.C_VAL_POS] : r[K.C_VAL_POS] + vl],
                     int(r[K.C_OFFSET]), int(bt[brow[i], K.B_BASE_TS]), int(r[K.C_REC_POS]))
