"""One ``__consumer_offsets`` segment -> Arrow tables of the raw offsets/group tables.

Pure Python + numba (no Spark): the same reader serves the local process pool and the Spark
job's executors. Transaction states are resolved later, per partition, across segments
(``transactions.py``); a :class:`SegmentResult` carries the control markers for that.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines import arrow
from pipelines.errors import InputError
from pipelines.kafka import kernel_tables as K
from pipelines.kafka import native
from pipelines.kafka.batch_times import first_timestamps
from pipelines.kafka.batches import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    NO_BOUNDS,
    OffsetBounds,
    walk_segment,
)
from pipelines.kafka.consumer_protocol import assigned_partitions, subscribed_topics
from pipelines.kafka.errors import DecodeError, UndecodableKey, UndecodableValue
from pipelines.kafka.groups import GROUP_TYPES, GroupRecords
from pipelines.kafka.records import (
    GROUP_METADATA_VALUE,
    decode,
    key_ops,
    offset_value_ops,
)
from pipelines.warehouse import quarantine
from pipelines.warehouse.tables import (
    RAW_COORDINATOR_RECORDS,
    RAW_GROUP_ASSIGNMENTS,
    RAW_GROUP_MEMBERS,
    RAW_GROUP_METADATA,
    RAW_OFFSET_COMMITS,
    TS,
)

SOURCE = "offsets"
KEY_ERRORS = {
    K.E_NULL: "null key",
    K.E_STRUCT_SHORT: "key runs past its bytes",
    K.E_BAD_STRING: "bad string length in key",
    K.E_UNKNOWN_VERSION: "negative key type",
}
VALUE_ERRORS = {
    K.E_STRUCT_SHORT: "value runs past its bytes",
    K.E_BAD_STRING: "bad string length in value",
    K.E_BAD_TAG: "TopicId (tag 0) is not 16 bytes",
    K.E_UNKNOWN_VERSION: "unknown OffsetCommitValue version",
}


@dataclass
class SegmentResult:
    path: str
    partition: int
    tables: dict[str, pa.Table]
    marker_offset: np.ndarray
    marker_producer: np.ndarray
    marker_commit: np.ndarray
    stats: dict[str, int] = field(default_factory=dict)


def read_bytes(path: Path) -> np.ndarray:
    """The bytes of ``path`` as a writable uint8 array: a private (copy-on-write) map of the file,
    whose pages come straight from the page cache; ``np.fromfile`` copied every byte first. A
    file deleted meanwhile stays readable; one truncated by a live broker while mapped would end
    the process with SIGBUS (kaudit reads copied or stopped log dirs)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not size:
                return np.zeros(0, dtype=np.uint8)
            return np.frombuffer(mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY), dtype=np.uint8)
    except OSError as err:
        raise InputError(f"{path}: cannot read ({err.strerror or err})") from None


def _arrow_binary(kind: str, buf: np.ndarray, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """Spans (length -1 = null) -> an Arrow string/binary array (32-bit offsets when they fit)."""
    pos, length = np.ascontiguousarray(pos), np.ascontiguousarray(length)
    offsets, data = native.kernels().gather_strings(buf, pos, length)
    n = len(pos)
    valid = length >= 0
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    small = len(data) < 2**31 - 1
    typ = {("string", True): pa.string(), ("string", False): pa.large_string(),
           ("binary", True): pa.binary(), ("binary", False): pa.large_binary()}[(kind, small)]
    if small:
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=int(n - valid.sum()))


def _strings(buf: np.ndarray, pos: np.ndarray, length: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Arrow strings of the spans (length -1 = null) and a mask of the rows that are not UTF-8."""
    arr = _arrow_binary("string", buf, pos, length)
    bad = np.zeros(len(arr), dtype=bool)
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        pos, length = np.asarray(pos), np.asarray(length)
        values = []
        for i in range(len(arr)):
            text = None
            if length[i] >= 0:
                try:
                    text = buf[pos[i] : pos[i] + length[i]].tobytes().decode("utf-8")
                except UnicodeDecodeError:
                    bad[i] = True
            values.append(text)
        arr = pa.array(values, pa.string())
    return arr, bad


def _dictionary(buf: np.ndarray, pos: np.ndarray, length: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Like :func:`_strings`, dictionary-encoded in the kernel (int32 indices + the distinct
    strings, UTF-8 checked once each); plain strings when a distinct one is not UTF-8."""
    if not (length > 0).any():
        return _empty_or_null(length), np.zeros(len(length), dtype=bool)
    index, offsets, data = native.kernels().dictionary_spans(buf, np.ascontiguousarray(pos),
                                                            np.ascontiguousarray(length))
    values = pa.Array.from_buffers(pa.string() if len(data) < 2**31 else pa.large_string(), len(offsets) - 1,
                                   [None, pa.py_buffer(offsets.astype(np.int32) if len(data) < 2**31 else offsets),
                                    pa.py_buffer(data)])
    try:
        values.validate(full=True)
    except pa.ArrowInvalid:
        return _strings(buf, pos, length)
    null = index < 0
    indices = arrow.array(index, pa.int32(), mask=null)
    return pa.DictionaryArray.from_arrays(indices, values), np.zeros(len(index), dtype=bool)


def _empty_or_null(length: np.ndarray) -> pa.Array:
    """The dictionary array of spans that are all empty or null (length -1), as
    :func:`_dictionary` encodes them, without hashing each: a commit's metadata is usually
    empty, and its dictionary took 0.010 CPU s of the 500,000 commits of a benchmark file
    (``bench_offsets.py``) against 0.001 s here."""
    null = length < 0
    values = arrow.strings([] if null.all() else [""])
    return pa.DictionaryArray.from_arrays(arrow.array(np.zeros(len(length), dtype=np.int32), mask=null), values)


def _repeat(text: str, n: int) -> pa.Array:
    """``n`` times the same string: one dictionary entry."""
    return pa.DictionaryArray.from_arrays(arrow.array(np.zeros(n, dtype=np.int32)), arrow.strings([text]))


_B64URL = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8)


def _uuid_texts(buf: np.ndarray, pos: np.ndarray, length: np.ndarray) -> pa.Array:
    """16-byte spans (length -1 = null) -> Kafka's ``Uuid.toString()``: URL-safe base64 without
    padding (22 characters), computed on whole arrays."""
    n = len(pos)
    has = length == 16
    m = int(has.sum())
    if not m:
        return pa.nulls(n, pa.string())
    padded = np.zeros((m, 18), dtype=np.uint32)
    padded[:, :16] = buf[pos[has][:, None] + np.arange(16)]
    g = padded.reshape(m, 6, 3)
    v = (g[..., 0] << 16) | (g[..., 1] << 8) | g[..., 2]
    sextets = np.stack([v >> 18, (v >> 12) & 63, (v >> 6) & 63, v & 63], axis=-1).reshape(m, 24)[:, :22]
    offsets = np.zeros(n + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(np.where(has, 22, 0))
    bitmap = None if m == n else pa.py_buffer(np.packbits(has, bitorder="little"))
    data = pa.py_buffer(_B64URL[sextets].tobytes())
    return pa.Array.from_buffers(pa.string(), n, [bitmap, pa.py_buffer(offsets), data], null_count=n - m)


def _take(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``a[rows]`` for increasing, distinct ``rows`` (``np.flatnonzero``): ``a`` itself, no copy,
    when they are every row (the usual segment: every record a data record, every key a commit)."""
    return a if len(rows) == len(a) else a[rows]


def _ts(values: np.ndarray, null: np.ndarray) -> pa.Array:
    """Epoch milliseconds -> timestamp[ms, UTC] (null where ``null``)."""
    return arrow.array(values, TS, mask=null)


@dataclass
class _Records:
    """The records the byte walk found, one numpy column each, plus where bad ones go."""

    path: str
    partition: int
    buf: np.ndarray
    offset: np.ndarray  # log offset
    key_pos: np.ndarray
    key_len: np.ndarray
    val_pos: np.ndarray
    val_len: np.ndarray  # -1 = null value (tombstone)
    rec_pos: np.ndarray  # file position reported for the record (its batch's when compressed)
    producer: np.ndarray
    is_txn: np.ndarray
    is_control: np.ndarray
    batch: np.ndarray  # the record's batch row
    batch_ts: np.ndarray  # per batch row: its first timestamp (batch_times.first_timestamps) ...
    has_batch_ts: np.ndarray  # ... where it has one
    batch_base: np.ndarray  # per batch row: its base offset
    quarantine: list[dict]  # raw/quarantine rows

    def value(self, i: int) -> bytes | None:
        n = self.val_len[i]
        return None if n < 0 else self.buf[self.val_pos[i] : self.val_pos[i] + n].tobytes()

    def reject(self, i: int, err: DecodeError) -> None:
        """Quarantine record ``i`` with its value."""
        self.reject_part(i, err, self.value(i))

    def reject_part(self, i: int, err: DecodeError, raw: bytes | None) -> None:
        """Quarantine ``raw``, a part of record ``i``."""
        self.quarantine.append(quarantine.row(SOURCE, quarantine.at(self.path, int(self.rec_pos[i])), err, raw))


def _records(name: str, partition: int, walk) -> _Records:
    recs, bt = walk.records, walk.batches
    brow = walk.region_batch[recs[:, K.C_REGION]] if len(recs) else np.zeros(0, dtype=np.int64)
    # per batch first, then one gather per column (a 2-D gather per record cost twice as much)
    v2 = bt[:, K.B_MAGIC] == 2
    attrs = bt[:, K.B_ATTRS]
    first_ts, has_ts = first_timestamps(bt)
    return _Records(
        path=name,
        partition=partition,
        buf=walk.buf,
        offset=recs[:, K.C_OFFSET],
        key_pos=np.ascontiguousarray(recs[:, K.C_KEY_POS]),
        key_len=np.ascontiguousarray(recs[:, K.C_KEY_LEN]),
        val_pos=np.ascontiguousarray(recs[:, K.C_VAL_POS]),
        val_len=np.ascontiguousarray(recs[:, K.C_VAL_LEN]),
        rec_pos=recs[:, K.C_REC_POS],
        producer=np.where(v2, bt[:, K.B_PRODUCER_ID], -1)[brow],
        is_txn=(v2 & ((attrs & ATTR_TRANSACTIONAL) != 0))[brow],
        is_control=(v2 & ((attrs & ATTR_CONTROL) != 0))[brow],
        batch=brow,
        batch_ts=first_ts,
        has_batch_ts=has_ts,
        batch_base=bt[:, K.B_BASE_OFFSET],
        quarantine=[quarantine.row(SOURCE, quarantine.at(name, pos), err, raw) for pos, err, raw in walk.bad],
    )


def decode_segment(path: str | Path, partition: int, data: np.ndarray | None = None,
                   bounds: OffsetBounds = NO_BOUNDS) -> SegmentResult:
    """Decode one segment file of ``__consumer_offsets`` partition ``partition`` (``data``:
    its bytes when already in memory; ``bounds``: its offset range, ``paths.offset_bounds``)."""
    path = Path(path)
    walk = walk_segment(read_bytes(path) if data is None else data, bounds=bounds)
    r = _records(str(path), partition, walk)
    markers = _markers(r)

    data_rows = np.flatnonzero(~r.is_control)
    keys = _Keys(r, data_rows)
    new_groups, raw_kept = _group_records(r, keys, keys.rows_in(GROUP_TYPES.start, GROUP_TYPES.stop))
    tables = {
        "raw/offset_commits": _commits(r, keys, keys.rows_of(0, 1)),
        **_groups(r, keys, keys.rows_of(2)),
        **new_groups,
        "raw/coordinator_records": _coordinator(r, keys, np.union1d(raw_kept, keys.rows_in(GROUP_TYPES.stop))),
        "raw/quarantine": quarantine.table(r.quarantine),
    }
    stats = {
        "files": 1,
        "bytes": walk.file_size,
        "batches": walk.good_batches,
        "records": len(r.offset),
        "control_records": int(r.is_control.sum()),
    }
    return SegmentResult(r.path, partition, tables, *markers, stats)


def _markers(r: _Records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log offset, producer, is COMMIT) of the transaction markers (one per control batch)."""
    off, pid, commit = [], [], []
    for i in np.flatnonzero(r.is_control):
        if r.key_len[i] < 4:
            r.reject(i, UndecodableKey(f"control record key of {r.key_len[i]} bytes (log offset {r.offset[i]})"))
            continue
        ctype = int.from_bytes(r.buf[r.key_pos[i] + 2 : r.key_pos[i] + 4].tobytes(), "big", signed=True)
        if ctype in (0, 1):  # ABORT, COMMIT; other control types carry no offsets data
            off.append(int(r.offset[i]))
            pid.append(int(r.producer[i]))
            commit.append(ctype == 1)
    return np.array(off, dtype=np.int64), np.array(pid, dtype=np.int64), np.array(commit, dtype=bool)


class _Keys:
    """Record keys of the data records, decoded by the kernel from ``records.KEY_BY_TYPE``."""

    def __init__(self, r: _Records, rows: np.ndarray):
        self.ops = key_ops()
        self.rows = rows  # record index of each key
        self.type, self.ints, self.spos, self.slen, self.err = native.kernels().decode_flat(
            r.buf, _take(r.key_pos, rows), _take(r.key_len, rows), self.ops.ops, self.ops.nops, self.ops.nints,
            self.ops.nstrs
        )
        known = (self.type >= 0) & (self.type <= 24)
        # keys 0-2 must decode; 3-24 only need their type here (``groups.py`` decodes the whole
        # key); an unknown type > 24 is kept raw; a null key, a cut-off type or a negative type is bad
        self.ok = (self.err == 0) | (known & (self.type >= 3)) | ((self.type > 24) & (self.err == K.E_UNKNOWN_VERSION))
        self.group_ok = known & (self.err == 0)
        for j in np.flatnonzero(~self.ok):
            i = rows[j]
            reason = KEY_ERRORS.get(int(self.err[j]), f"key error {self.err[j]}")
            r.reject(i, UndecodableKey(f"{reason} (log offset {r.offset[i]})"))

    def rows_in(self, lo: int, hi: int = 2**15) -> np.ndarray:
        """Key indexes of good keys of a type in ``[lo, hi)``."""
        return np.flatnonzero(self.ok & (self.type >= lo) & (self.type < hi))

    def rows_of(self, *types: int) -> np.ndarray:
        """Key indexes of good keys of these types."""
        match = np.zeros(len(self.type), dtype=bool)
        for t in types:
            match |= self.type == t
        return np.flatnonzero(self.ok & match)

    def strings(self, r: _Records, field: str, j: np.ndarray, valid: np.ndarray | None = None,
                dictionary: bool = False):
        slot = self.ops.str_slots[field]
        length = _take(self.slen[:, slot], j)
        if valid is not None:
            length = np.where(valid, length, -1)
        return (_dictionary if dictionary else _strings)(r.buf, _take(self.spos[:, slot], j), length)


# raw/offset_commits as decoded: its repeating strings dictionary-encoded (Arrow dictionary
# arrays); ``encoded`` -> RAW_OFFSET_COMMITS is a cast, and Parquet stores both the same way
DICTIONARY_ENCODED = ("group_id", "topic", "metadata", "txn_state", "segment_file")


def encoded(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its :data:`DICTIONARY_ENCODED` columns as int32-indexed dictionaries."""
    return pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in DICTIONARY_ENCODED else f
                      for f in schema])


ENCODED_OFFSET_COMMITS = encoded(RAW_OFFSET_COMMITS)


def _commits(r: _Records, keys: _Keys, cj: np.ndarray) -> pa.Table:
    """raw/offset_commits rows of the offset commit records (key types 0, 1)."""
    ci = keys.rows[cj]
    val_pos, val_len = _take(r.val_pos, ci), _take(r.val_len, ci)
    tomb = val_len < 0
    vops = offset_value_ops()
    vver, vint, vspos, vslen, verr = native.kernels().decode_flat(r.buf, val_pos, val_len,
                                                   vops.ops, vops.nops, vops.nints, vops.nstrs)
    verr = np.where(tomb, 0, verr)
    for j in np.flatnonzero(verr):
        why = VALUE_ERRORS.get(int(verr[j]), f"value error {verr[j]}")
        if verr[j] == K.E_UNKNOWN_VERSION:
            why = f"unknown OffsetCommitValue version {vver[j]}"
        r.reject(ci[j], UndecodableValue(f"{why} (log offset {r.offset[ci[j]]})"))
    group, bad_g = keys.strings(r, "group", cj, dictionary=True)
    topic, bad_t = keys.strings(r, "topic", cj, dictionary=True)
    ts = vops.str_slots["topic_id"]
    topic_ids = _uuid_texts(r.buf, vspos[:, ts], np.where(tomb, -1, vslen[:, ts]))
    ms = vops.str_slots["metadata"]
    meta, bad_m = _dictionary(r.buf, vspos[:, ms], np.where(tomb, -1, vslen[:, ms]))
    for j in np.flatnonzero((verr == 0) & (bad_g | bad_t | bad_m)):
        err = UndecodableKey("group or topic") if bad_g[j] or bad_t[j] else UndecodableValue("metadata")
        r.reject(ci[j], type(err)(f"{err} is not UTF-8 (log offset {r.offset[ci[j]]})"))
    keep = (verr == 0) & ~(bad_g | bad_t | bad_m)
    if keep.all():  # the usual case: no copies of what is already in place
        idx, pick = slice(None), (lambda a: a)
    else:
        idx = np.flatnonzero(keep)
        take = arrow.array(idx)
        pick = lambda a: a.take(take)  # noqa: E731
    vi = vops.int_slots
    epoch, expire = vint[idx, vi["leader_epoch"]], vint[idx, vi["expire_timestamp"]]
    tomb, vver, ci, cj = tomb[idx], vver[idx], ci[idx], cj[idx]
    n = len(ci)
    cols = {
        "group_id": pick(group),
        "topic": pick(topic),
        "partition": arrow.array(_take(keys.ints[:, keys.ops.int_slots["partition"]], cj).astype(np.int32)),
        "committed_offset": arrow.array(vint[idx, vi["offset"]], pa.int64(), mask=tomb),
        "leader_epoch": arrow.array(epoch.astype(np.int32), pa.int32(), mask=tomb | (vver < 3) | (epoch < 0)),
        "metadata": pick(meta),
        "commit_timestamp": _ts(vint[idx, vi["commit_timestamp"]], tomb),
        "expire_timestamp": _ts(expire, tomb | (vver != 1) | (expire < 0)),
        "is_tombstone": arrow.array(tomb),
        "key_version": arrow.array(_take(keys.type, cj).astype(np.int16)),
        "value_version": arrow.array(vver.astype(np.int16), pa.int16(), mask=tomb),
        "offsets_partition": arrow.array(np.full(n, r.partition, dtype=np.int32)),
        "log_offset": arrow.array(_take(r.offset, ci)),
        "producer_id": arrow.array(_take(r.producer, ci)),
        "is_transactional": arrow.array(_take(r.is_txn, ci)),
        # resolved per partition (offsets.with_txn_states)
        "txn_state": pa.nulls(n, ENCODED_OFFSET_COMMITS.field("txn_state").type),
        "segment_file": _repeat(r.path, n),
        "topic_id": pick(topic_ids),
    }
    table = pa.Table.from_pydict(cols).select(RAW_OFFSET_COMMITS.names)
    # the usual columns are built with their types: no cast (``Table.cast`` imports pyarrow.compute,
    # 0.05-0.2 CPU s in each worker); plain strings where a dictionary had a non-UTF-8 entry are cast
    return table if table.schema == ENCODED_OFFSET_COMMITS else table.cast(ENCODED_OFFSET_COMMITS)


def _group_records(r: _Records, keys: _Keys, gj: np.ndarray) -> tuple[dict[str, pa.Table], np.ndarray]:
    """The tables of the KIP-848/932/1071 group records (key types 3-24, ``groups.py``), and the
    key indexes of those kept raw (a value version no schema here knows)."""
    out = GroupRecords()
    raw = []
    for j in gj:
        i = keys.rows[j]
        key = r.buf[r.key_pos[i] : r.key_pos[i] + r.key_len[i]].tobytes()
        b = r.batch[i]
        place = dict(offsets_partition=r.partition, log_offset=int(r.offset[i]), segment_file=r.path,
                     batch_timestamp=int(r.batch_ts[b]) if r.has_batch_ts[b] else None,
                     batch_offset=int(r.batch_base[b]))
        try:
            if not out.add(int(keys.type[j]), key, r.value(i), place):
                raw.append(j)
        except DecodeError as err:
            r.reject(i, err)
    return out.tables(), np.array(raw, dtype=np.int64)


def _coordinator(r: _Records, keys: _Keys, oj: np.ndarray) -> pa.Table:
    """raw/coordinator_records: unknown key types and group record versions, raw, with the group
    id when the key has one."""
    if not len(oj):
        return arrow.empty_table(RAW_COORDINATOR_RECORDS)
    oi = keys.rows[oj]
    groups, bad = keys.strings(r, "group", oj, valid=keys.group_ok[oj])
    if bad.any():  # a group id that is not UTF-8 is unknown; the raw key keeps it
        groups = pa.array([None if b else x for x, b in zip(groups.to_pylist(), bad, strict=True)], pa.string())
    cols = {
        "key_type": arrow.array(keys.type[oj].astype(np.int16)),
        "group_id": groups,
        "key": _arrow_binary("binary", r.buf, r.key_pos[oi], r.key_len[oi]),
        "value": _arrow_binary("binary", r.buf, r.val_pos[oi], r.val_len[oi]),
        "offsets_partition": arrow.array(np.full(len(oj), r.partition, np.int32)),
        "log_offset": arrow.array(r.offset[oi]),
        "segment_file": _repeat(r.path, len(oj)),
    }
    return pa.Table.from_pydict(cols).cast(RAW_COORDINATOR_RECORDS)


class _Rows:
    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.cols: dict[str, list] = {n: [] for n in schema.names}

    def add(self, **row) -> None:
        for k, v in row.items():
            self.cols[k].append(v)

    def table(self) -> pa.Table:
        if not self.cols[self.schema.names[0]]:
            return arrow.empty_table(self.schema)
        return pa.Table.from_pydict(self.cols, schema=self.schema)


def _groups(r: _Records, keys: _Keys, gj: np.ndarray) -> dict[str, pa.Table]:
    """raw/group_metadata, raw/group_members, raw/group_assignments of the GroupMetadata
    records (key type 2): one row per record / member / assigned partition, in log order."""
    names, bad = keys.strings(r, "group", gj)
    out = {t: _Rows(s) for t, s in (("raw/group_metadata", RAW_GROUP_METADATA),
                                     ("raw/group_members", RAW_GROUP_MEMBERS),
                                     ("raw/group_assignments", RAW_GROUP_ASSIGNMENTS))}
    for n, j in enumerate(gj):
        i = keys.rows[j]
        if bad[n]:
            r.reject(i, UndecodableKey(f"group id is not UTF-8 (log offset {r.offset[i]})"))
        else:
            _group_record(r, i, names[n].as_py(), *out.values())
    return {t: rows.table() for t, rows in out.items()}


def _group_record(r: _Records, i: int, group: str, gm: _Rows, members: _Rows, assigns: _Rows) -> None:
    log_offset = int(r.offset[i])
    where = dict(group_id=group, offsets_partition=r.partition, log_offset=log_offset)
    raw = r.value(i)
    if raw is None:
        gm.add(**where, generation=None, protocol_type=None, protocol=None, leader=None, state_timestamp=None,
               is_tombstone=True, value_version=None, segment_file=r.path)
        return
    try:
        version, v = decode(GROUP_METADATA_VALUE, raw)
    except DecodeError as err:
        r.reject(i, UndecodableValue(f"GroupMetadataValue: {err} (log offset {log_offset})"))
        return
    ts = v["current_state_timestamp"]
    gm.add(**where, generation=v["generation"], protocol_type=v["protocol_type"], protocol=v["protocol"],
           leader=v["leader"], state_timestamp=None if ts is None or ts < 0 else ts, is_tombstone=False,
           value_version=version, segment_file=r.path)
    consumer = v["protocol_type"] == "consumer"
    for m in v["members"] or []:
        topics: list[str] | None = []
        parts: list[tuple[str, int]] = []
        if consumer:  # other protocol types (connect, ...) embed their own formats
            whose = f"member {m['member_id']} of group {group}"
            try:
                topics = subscribed_topics(m["subscription"])
            except DecodeError as err:
                topics = None
                r.reject_part(i, UndecodableValue(f"subscription of {whose}: {err} (log offset {log_offset})"),
                              m["subscription"])
            try:
                parts = assigned_partitions(m["assignment"])
            except DecodeError as err:
                r.reject_part(i, UndecodableValue(f"assignment of {whose}: {err} (log offset {log_offset})"),
                              m["assignment"])
        # v0 has no rebalance timeout: the coordinator used the session timeout for both
        rebalance = m["rebalance_timeout"] if m["rebalance_timeout"] is not None else m["session_timeout"]
        members.add(**where, generation=v["generation"], member_id=m["member_id"],
                    group_instance_id=m["group_instance_id"], client_id=m["client_id"],
                    client_host=m["client_host"], session_timeout_ms=m["session_timeout"],
                    rebalance_timeout_ms=rebalance, subscribed_topics=topics)
        for topic, p in parts:
            assigns.add(**where, generation=v["generation"], member_id=m["member_id"], topic=topic, partition=p)


def warm_up() -> None:
    """Load every kernel (numba cache) in this process, e.g. before forking workers: a tiny
    hand-made segment of one commit record through the whole decoder, and the string gather
    of the group records (a group record itself would build its tables from Python lists,
    which imports pandas: :mod:`pipelines.arrow`)."""
    import struct

    import crc32c

    def record(delta: int, key: bytes, value: bytes) -> bytes:
        body = b"\x00\x00" + bytes([delta * 2, len(key) * 2]) + key + bytes([len(value) * 2]) + value + b"\x00"
        return bytes([len(body) * 2]) + body

    commit_key = b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00"
    commit_value = b"\x00\x03" + bytes(8) + b"\xff\xff\xff\xff\x00\x00" + bytes(8)
    tail = struct.pack(">hiqqqhii", 0, 0, 0, 0, -1, -1, -1, 1) + record(0, commit_key, commit_value)
    head = struct.pack(">qiibI", 0, len(tail) + 9, 0, 2, crc32c.crc32c(tail))
    data = np.frombuffer(head + tail, dtype=np.uint8).copy()  # writable, like np.fromfile
    decode_segment("<warm-up>", 0, data)
    _arrow_binary("string", data, np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64))
