"""Segments of one ``__consumer_offsets`` partition -> its raw tables, with transaction states
resolved across the partition's segments in log order. No Spark here.

Two ways to run it:

- :func:`decode_scope`: one partition in one call, in memory (the decoder's tests);
- per file, in parallel (``kaudit extract offsets``): :func:`decode_file_to_parts` decodes
  each file independently and writes its tables' rows itself, as Iceberg data files at the
  tables' location (:class:`~pipelines.warehouse.writer.DataFileTarget`), so neither the
  decoding nor the Parquet encoding funnels through one process. A file with transactional commits needs
  the transaction markers of its whole partition (a later segment may hold them): it returns
  its own markers, and is decoded again once every file's markers are known.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipelines.kafka.groups import TABLE_NAMES as GROUP_TABLES
from pipelines.kafka.paths import Segment
from pipelines.kafka.segment import SegmentResult, decode_segment
from pipelines.kafka.transactions import resolve, state_array
from pipelines.warehouse.tables import RAW
from pipelines.warehouse.writer import DataFileTarget

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


# columns whose values repeat: dictionary pages pay there, not on offsets and timestamps. ``partition``
# (a topic's partitions, a few dozen values): a part of the benchmark's commits (bench_offsets.py)
# is written faster and smaller than plain; the other small int columns gained nothing
DICTIONARY_COLUMNS = ["group_id", "topic", "partition", "metadata", "segment_file", "txn_state", "protocol_type",
                      "protocol", "leader", "member_id", "client_id", "client_host", "group_instance_id",
                      "subscribed_topics", "topic_id"]
# increasing int64 columns: delta encoding writes them in a fraction of the time and bytes of plain+zstd
DELTA_COLUMNS = {"raw/offset_commits": {"log_offset": "DELTA_BINARY_PACKED", "commit_timestamp": "DELTA_BINARY_PACKED"}}
# codecs: zstd unless named here. raw/offset_commits in LZ4 (``LZ4_RAW``) but for ``committed_offset``,
# the one column whose pages zstd shrinks by a quarter: the rest are dictionary indices, delta
# runs and constant or all-valid pages that either codec takes to almost nothing. On a part of the
# benchmark's commits (bench_offsets.py) this writes nearly as fast as LZ4 throughout and nearly
# as small as zstd throughout
COMPRESSION = {"raw/offset_commits": {**dict.fromkeys(RAW["raw/offset_commits"].names, "lz4"),
                                      "committed_offset": "zstd"}}
# rows the Parquet writer encodes per step (its default 1,024: levels, statistics and the page-size
# check per step). The same 500,000-row part: 0.0549-0.0566 s at 65,536 against 0.0583-0.0586 (best
# of 9, twice); the pages stay under the 1 MB default (64k int64 values = 512 KB)
WRITE_BATCH_ROWS = 65536

Markers = tuple[np.ndarray, np.ndarray, np.ndarray]  # (log offset, producer id, is COMMIT)


def _transactional(commits: pa.Table) -> bool:
    """Has any of ``commits`` a transactional batch? (``true_count`` per chunk: ``pyarrow.compute``
    takes 0.05-0.2 s to import, in the parent before its workers start; ``to_numpy`` imports pandas.)"""
    return any(c.true_count for c in commits["is_transactional"].chunks)


def with_txn_states(commits: pa.Table, markers: Markers) -> pa.Table:
    """``commits`` with ``txn_state`` resolved from its partition's markers."""
    if not _transactional(commits):
        return commits
    state = resolve(
        commits["log_offset"].to_numpy(),
        commits["producer_id"].to_numpy(),
        commits["is_transactional"].to_numpy(zero_copy_only=False),
        *markers,
    )
    return commits.set_column(commits.schema.get_field_index("txn_state"), "txn_state", state_array(state))


def decode_file_to_parts(
    seg: Segment, markers: Markers | None, targets: dict[str, DataFileTarget], part: str
) -> tuple[dict[str, int], dict[str, int], pa.Table, Markers, dict[str, str]] | Markers:
    """Decode one segment, resolve its transactional commits with its partition's ``markers``
    and write each non-empty table of ``targets`` as one data file ``<part>-*.parquet`` of the
    step's partition. Returns (rows per table, stats, its quarantine rows, its own markers, the
    data file of each table written) - quarantine is a shared table the caller writes. Without
    ``markers`` (the first pass, before the partition's are known), a segment whose commits are
    transactional writes nothing and returns only its own markers: the caller decodes it again
    with all of them."""
    r = decode_file(seg)
    tables = dict(r.tables)
    own = (r.marker_offset, r.marker_producer, r.marker_commit)
    commits = tables["raw/offset_commits"]
    if markers is None:
        if _transactional(commits):
            return own
        markers = own  # no transactional commit: no state to resolve
    tables["raw/offset_commits"] = with_txn_states(commits, markers)
    counts, written = {}, {}
    for t, data in tables.items():
        counts[t] = data.num_rows
        if t in targets and data.num_rows:
            written[t] = write_part(t, data, targets[t], part)
    return counts, r.stats, tables["raw/quarantine"], own, written


def write_part(table: str, data: pa.Table, target: DataFileTarget, part: str) -> str:
    """One data file of ``table``; its path. Dictionary-encoded columns (``segment.encoded``) go
    to the file as they are, indices and dictionary (no hashing of the strings again); the file
    stores Iceberg's types and field ids, not the Arrow schema (a Parquet string column reads
    as ``string``, as when it was written from one)."""
    encoded = [f.name for f in data.schema if pa.types.is_dictionary(f.type)]
    if not encoded:
        data = data.cast(RAW[table])
    # no min/max statistics of the dictionary-encoded columns: a fifth of the write time
    # (bench_offsets.py), and a part's group ids span nearly the whole range anyway
    stats = [n for n in data.column_names if n not in encoded] if encoded else True
    return target.write(data, part, compression=COMPRESSION.get(table, "zstd"), use_dictionary=DICTIONARY_COLUMNS,
                        column_encoding=DELTA_COLUMNS.get(table), write_statistics=stats,
                        write_batch_size=WRITE_BATCH_ROWS)


def assemble_scope(results: list[SegmentResult]) -> tuple[dict[str, pa.Table], dict[str, int]]:
    """Concatenate the segments of one partition (in log order) and resolve txn states."""
    tables = {t: pa.concat_tables([r.tables[t] for r in results]) if results else RAW[t].empty_table() for t in TABLES}
    markers = tuple(np.concatenate([getattr(r, f) for r in results] or [np.zeros(0)])
                    for f in ("marker_offset", "marker_producer", "marker_commit"))
    tables["raw/offset_commits"] = with_txn_states(tables["raw/offset_commits"], markers)
    tables = {t: data.cast(RAW[t]) for t, data in tables.items()}  # the declared types
    stats: dict[str, int] = {}
    for r in results:
        for k, v in r.stats.items():
            stats[k] = stats.get(k, 0) + v
    return tables, stats


def decode_scope(segments: list[Segment]) -> tuple[dict[str, pa.Table], dict[str, int]]:
    return assemble_scope([decode_file(s) for s in segments])
