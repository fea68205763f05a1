"""Segments of one ``__consumer_offsets`` partition -> its raw tables, with transaction states
resolved across the partition's segments in log order. No Spark here.

Two ways to run it:

- :func:`decode_scope`: one partition in one call, in memory (the decoder's tests);
- per file, in parallel (``kaudit extract offsets``): :func:`scan_markers` first reads only
  the transaction markers of every segment (batch headers + the control batches), then
  :func:`decode_file_to_parts` decodes each file independently, resolves its transactional
  commits against its partition's markers and writes its Parquet parts itself, so neither
  the decoding nor the Parquet encoding funnels through one process.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.kafka import kernels as K
from pipelines.kafka.batches import ATTR_CODEC, ATTR_CONTROL, V2_HEADER_SIZE, scan
from pipelines.kafka.groups import TABLE_NAMES as GROUP_TABLES
from pipelines.kafka.paths import Segment
from pipelines.kafka.segment import SegmentResult, decode_segment, read_bytes
from pipelines.kafka.transactions import resolve, state_array
from pipelines.tables import RAW

TABLES = (
    "raw/offset_commits",
    "raw/group_metadata",
    "raw/group_members",
    "raw/group_assignments",
    "raw/coordinator_records",
    *GROUP_TABLES,
    "raw/quarantine",
)


def decode_file(seg: Segment) -> SegmentResult:
    return decode_segment(seg.path, seg.partition, bounds=seg.bounds)


# columns whose values repeat: dictionary pages pay there, not on offsets and timestamps
DICTIONARY_COLUMNS = ["group_id", "topic", "metadata", "segment_file", "txn_state", "protocol_type", "protocol",
                      "leader", "member_id", "client_id", "client_host", "group_instance_id", "subscribed_topics",
                      "topic_id"]

Markers = tuple[np.ndarray, np.ndarray, np.ndarray]  # (log offset, producer id, is COMMIT)


def with_txn_states(commits: pa.Table, markers: Markers) -> pa.Table:
    """``commits`` with ``txn_state`` resolved from its partition's markers."""
    if not commits.num_rows or not pc.any(commits["is_transactional"]).as_py():
        return commits
    state = resolve(
        commits["log_offset"].to_numpy(),
        commits["producer_id"].to_numpy(),
        commits["is_transactional"].to_numpy(zero_copy_only=False),
        *markers,
    )
    return commits.set_column(commits.schema.get_field_index("txn_state"), "txn_state", state_array(state))


def scan_markers(seg: Segment) -> Markers:
    """The transaction markers of one segment without decoding its other records: the framing
    walk (CRCs checked), then the records of its control batches only. Corrupt batches are
    left to the full decode, which quarantines them."""
    buf = read_bytes(seg.path)
    bt = scan(buf, True, seg.bounds)
    rows = np.flatnonzero((bt[:, K.B_ERR] == K.OK) & (bt[:, K.B_MAGIC] == 2) & ((bt[:, K.B_ATTRS] & ATTR_CONTROL) != 0))
    regions = np.zeros((len(rows), K.R_FIELDS), dtype=np.int64)
    regions[:, K.R_START] = bt[rows, K.B_POS] + V2_HEADER_SIZE
    regions[:, K.R_END] = bt[rows, K.B_POS] + bt[rows, K.B_SIZE]
    regions[:, K.R_KIND] = K.KIND_V2
    regions[:, K.R_OFFSET] = bt[rows, K.B_BASE_OFFSET]
    regions[:, K.R_LAST_OFFSET] = bt[rows, K.B_LAST_OFFSET]
    regions[:, K.R_COUNT] = bt[rows, K.B_COUNT]
    regions[:, K.R_FILE_POS] = -1
    plain = (bt[rows, K.B_ATTRS] & ATTR_CODEC) == 0  # a broker never compresses a marker
    regions, producer = regions[plain], bt[rows[plain], K.B_PRODUCER_ID]
    recs, _ = K.walk_records(buf, regions, K.CRC32_TABLE)
    key = recs[:, K.C_KEY_POS]
    ok = recs[:, K.C_KEY_LEN] >= 4  # key: version int16, type int16
    at = np.where(ok, key, 0)
    ctype = np.where(ok, (buf[at + 2].astype(np.int64) << 8) | buf[at + 3], -1)
    txn = (ctype == 0) | (ctype == 1)  # ABORT, COMMIT
    return recs[txn, K.C_OFFSET].copy(), producer[recs[txn, K.C_REGION]], ctype[txn] == 1


def decode_file_to_parts(
    seg: Segment, markers: Markers, staging: dict[str, str], part: str
) -> tuple[dict[str, int], dict[str, int], pa.Table]:
    """Decode one segment, resolve its transactional commits with its partition's ``markers``
    and write each non-empty table as ``<staging[table]>/<part>.parquet``. Returns (rows per
    table, stats, its quarantine rows) - quarantine is a shared table the caller writes."""
    r = decode_file(seg)
    tables = dict(r.tables)
    tables["raw/offset_commits"] = with_txn_states(tables["raw/offset_commits"], markers)
    counts = {}
    for t, data in tables.items():
        counts[t] = data.num_rows
        if t in staging and data.num_rows:
            pq.write_table(data.cast(RAW[t]), f"{staging[t]}/{part}.parquet", compression="zstd",
                           use_dictionary=DICTIONARY_COLUMNS)
    return counts, r.stats, tables["raw/quarantine"]


def assemble_scope(results: list[SegmentResult]) -> tuple[dict[str, pa.Table], dict[str, int]]:
    """Concatenate the segments of one partition (in log order) and resolve txn states."""
    tables = {t: pa.concat_tables([r.tables[t] for r in results]) if results else RAW[t].empty_table() for t in TABLES}
    markers = tuple(np.concatenate([getattr(r, f) for r in results] or [np.zeros(0)])
                    for f in ("marker_offset", "marker_producer", "marker_commit"))
    tables["raw/offset_commits"] = with_txn_states(tables["raw/offset_commits"], markers)
    stats: dict[str, int] = {}
    for r in results:
        for k, v in r.stats.items():
            stats[k] = stats.get(k, 0) + v
    return tables, stats


def decode_scope(segments: list[Segment]) -> tuple[dict[str, pa.Table], dict[str, int]]:
    return assemble_scope([decode_file(s) for s in segments])
