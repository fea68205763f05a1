"""Batch-level timestamps of data-topic partitions (``raw/batch_timestamps``) from the batch
headers the log-end scan already frames (no record bodies, no decompression), and the log dir's
``log-start-offset-checkpoint`` (``raw/log_start_checkpoints``).

Sources: Apache Kafka ``DefaultRecordBatch`` / ``LegacyRecord`` (``docs/formats.md``
section 1), ``LogValidator`` (LogAppendTime), ``CheckpointFile`` / ``OffsetCheckpointFile``.

Grammar (big-endian, header fields only)::

    magic 2   = baseOffset int64 @0, ..., attributes int16 @21 (bit 3 timestampType:
                0 CreateTime, 1 LogAppendTime; bit 5 isControl), lastOffsetDelta int32 @23,
                baseTimestamp int64 @27 (the first record's timestamp), maxTimestamp int64 @35,
                ..., recordCount int32 @57
    magic 1   = offset int64, size int32, crc, magic, attributes int8 (bit 3 timestampType),
                timestamp int64   (a compressed wrapper: the max of its inner messages under
                CreateTime, the append time under LogAppendTime; its offset is its LAST one)
    magic 0   = no timestamp
    timestamp = -1 (NO_TIMESTAMP) means none
    checkpoint file = version int (0) "\\n", count "\\n", count x "topic partition offset\\n" (text)

Timestamp of a batch's first present record (``first_timestamp``):

- magic 2 CreateTime: baseTimestamp. Compaction rewrites a batch keeping its base offset but
  the builder takes the first *retained* record's timestamp, so it is the timestamp of the next
  present offset at or after the base offset, as a consumer would read it.
- LogAppendTime (magic 1 or 2): the broker sets maxTimestamp to the append time and every record
  of the batch carries it (``LogValidator``), so first = max = each record's timestamp.
- magic 1 uncompressed message: its timestamp. Magic 1 compressed wrapper under CreateTime:
  unknown without decompressing (null; its max is known). Magic 0: null.

The base offset of a legacy compressed wrapper is not in its header (it carries its last
inner offset): it is taken as one past the previous batch of the segment (or the segment's
base offset), the first offset it can hold.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines.kafka import kernel_tables as K
from pipelines.kafka.batches import ATTR_CODEC, ATTR_CONTROL
from pipelines.warehouse.tables import RAW_BATCH_TIMESTAMPS, RAW_LOG_START_CHECKPOINTS, TS

ATTR_LOG_APPEND_TIME = 0x08
NO_TIMESTAMP = -1
CHECKPOINT_FILE = "log-start-offset-checkpoint"
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def segment_rows(good: np.ndarray, segment_base: int) -> np.ndarray:
    """The good rows of one segment's batch table, base offsets of legacy wrappers filled in
    (see the module doc), with the segment's base offset appended as a last column."""
    rows = good.copy()
    wrapper = (rows[:, K.B_MAGIC] < 2) & ((rows[:, K.B_ATTRS] & ATTR_CODEC) != 0)
    if wrapper.any():
        before = np.empty(len(rows), dtype=np.int64)
        before[0] = max(segment_base, 0)
        before[1:] = rows[:-1, K.B_LAST_OFFSET] + 1
        rows[wrapper, K.B_BASE_OFFSET] = np.minimum(before[wrapper], rows[wrapper, K.B_LAST_OFFSET])
    return np.column_stack([rows, np.full(len(rows), segment_base, dtype=np.int64)])


def _ts(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.int64(), mask=~valid).cast(TS)


def _kinds(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(magic, LogAppendTime, compressed old-format wrapper) per batch of a batch table."""
    magic, attrs = rows[:, K.B_MAGIC], rows[:, K.B_ATTRS]
    return magic, (magic >= 1) & ((attrs & ATTR_LOG_APPEND_TIME) != 0), (magic < 2) & ((attrs & ATTR_CODEC) != 0)


def first_timestamps(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(timestamp, present) of the first present record of each batch of a batch table
    (``kernels.B_*`` columns; the module doc's rules)."""
    magic, log_append, wrapper = _kinds(rows)
    first = np.where(log_append | (magic == 1), rows[:, K.B_MAX_TS], rows[:, K.B_BASE_TS])
    present = ((magic == 2) | log_append | ((magic == 1) & ~wrapper)) & (first != NO_TIMESTAMP)
    return first, present


def batch_table(topic: str, partition: int, rows: np.ndarray) -> pa.Table:
    """``raw/batch_timestamps`` rows of one partition from :func:`segment_rows` output."""
    n = len(rows)
    magic, log_append, wrapper = _kinds(rows)
    max_ts = rows[:, K.B_MAX_TS]
    first, has_first = first_timestamps(rows)
    has_max = (magic >= 1) & (max_ts != NO_TIMESTAMP)
    ts_type = pa.DictionaryArray.from_arrays(
        pa.array(log_append.astype(np.int8), mask=magic == 0), pa.array(TIMESTAMP_TYPES)
    ).cast(pa.string())
    count = pa.array(rows[:, K.B_COUNT], type=pa.int64(), mask=wrapper).cast(pa.int32())
    return pa.Table.from_arrays(
        [
            pa.DictionaryArray.from_arrays(np.zeros(n, dtype=np.int32), pa.array([topic])).cast(pa.string()),
            pa.array(np.full(n, partition, dtype=np.int32)),
            pa.array(rows[:, K.B_FIELDS]),
            pa.array(rows[:, K.B_POS]),
            pa.array(rows[:, K.B_SIZE]),
            pa.array(magic.astype(np.int8)),
            pa.array(rows[:, K.B_BASE_OFFSET]),
            pa.array(rows[:, K.B_LAST_OFFSET]),
            count,
            pa.array((magic == 2) & ((rows[:, K.B_ATTRS] & ATTR_CONTROL) != 0)),
            ts_type,
            _ts(first, has_first),
            _ts(max_ts, has_max),
        ],
        schema=RAW_BATCH_TIMESTAMPS,
    )


def read_checkpoint(path: Path) -> tuple[list[tuple[str, int, int]], list[tuple[str, str]]]:
    """(topic, partition, log start offset) of a ``log-start-offset-checkpoint`` file, and the
    (location, reason) of what cannot be read (the whole file when its header is bad, else each
    bad line)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        return [], [(str(path), f"CheckpointError: cannot read ({getattr(err, 'strerror', None) or err})")]
    if len(lines) < 2 or lines[0].strip() != "0" or not lines[1].strip().isdigit():
        return [], [(f"{path}:1", "CheckpointError: expected version 0 and an entry count on the first two lines")]
    out, bad = [], []
    for n, line in enumerate(lines[2:], 3):
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            bad.append((f"{path}:{n}", f"CheckpointError: expected 'topic partition offset', got {line[:80]!r}"))
            continue
        out.append((parts[0], int(parts[1]), int(parts[2])))
    if len(out) + len(bad) != int(lines[1]):
        bad.append((f"{path}:2", f"CheckpointError: announces {int(lines[1])} entries, holds {len(out) + len(bad)}"))
    return out, bad


def checkpoint_table(rows: list[tuple[str, int, int, str]]) -> pa.Table:
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return pa.Table.from_arrays([pa.array(c, t.type) for c, t in zip(cols, RAW_LOG_START_CHECKPOINTS, strict=True)],
                                schema=RAW_LOG_START_CHECKPOINTS)
