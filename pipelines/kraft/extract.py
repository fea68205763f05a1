"""``kaudit extract kraft``: KRaft metadata segments and snapshots -> ``raw/metadata_records``
and the replayed registry (``raw/kraft_brokers``, ``raw/kraft_topics``,
``raw/kraft_partitions``, ``raw/kraft_configs``, ``raw/kraft_cluster``).

The files are ordinary magic-2 segments: the batch walk is kaudit's
(:func:`pipelines.kafka.batches.walk_segment`, numba); the values of the flat record types (all
the frequent ones) become their JSON text in a numba kernel (:mod:`pipelines.kraft.kernels`),
parsed back only for the records the replay applies; every other value is decoded by
:mod:`pipelines.kraft.decode`. Both read the same field tables.

The replay starts from the newest usable snapshot at or before the target (a header control
record first, a footer last, nothing corrupt; ``--at-time``: its header's
``LastContainedLogTimestamp`` at or before the time) and applies the log records from the
snapshot's end offset on, to the end of the log or to the target (``--at-offset N``: every
record at offset <= N; ``--at-time T``: up to the first record appended after T). Log records
before the snapshot's end are written to ``raw/metadata_records`` as history but not applied.
Corrupt parts and records go to ``raw/quarantine`` (source ``kraft``, file:byte, reason);
records of an unknown apiKey or version are kept raw in ``raw/metadata_records`` and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.kafka import kernel_tables as K
from pipelines.kafka.batches import ATTR_CONTROL, walk_segment
from pipelines.kafka.errors import DecodeError
from pipelines.kafka.segment import _arrow_binary, _repeat, read_bytes
from pipelines.kraft import kernels as KK
from pipelines.kraft import messages as M
from pipelines.kraft.decode import BadMetadataRecord, decode_control, decode_metadata
from pipelines.kraft.files import MetadataFiles, Snapshot, metadata_files
from pipelines.kraft.redact import REDACTED, redact_records, secret_config
from pipelines.kraft.replay import (
    ABORT_TXN,
    BEGIN_TXN,
    CLEAR_ELR,
    CONFIG,
    CONFIG_FIELDS,
    END_TXN,
    PARTITION,
    PARTITION_CHANGE,
    PARTITION_FIELDS,
    REMOVE_TOPIC,
    REPLAYED,
    RESOURCE_TYPES,
    Registry,
)
from pipelines.warehouse import quarantine as Q
from pipelines.warehouse.tables import (
    RAW_KRAFT_BROKERS,
    RAW_KRAFT_CLUSTER,
    RAW_KRAFT_CONFIGS,
    RAW_KRAFT_PARTITIONS,
    RAW_KRAFT_TOPICS,
    RAW_METADATA_RECORDS,
    TS,
)

STEP = "extract_kraft"
SOURCE = "kraft"
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4
_json = json.JSONEncoder(separators=(",", ":")).encode  # one encoder (json.dumps with options makes one per call)
STATEFUL = np.array(sorted({*REPLAYED, BEGIN_TXN, END_TXN, ABORT_TXN}))  # the apiKeys the replay parses back
PARTITION_KEYS = np.array([PARTITION, PARTITION_CHANGE])
BARRIERS = np.array([REMOVE_TOPIC, CLEAR_ELR, BEGIN_TXN, END_TXN, ABORT_TXN])  # end a run of partition / config records
_PARTITION_JSON = pa_json.ParseOptions(explicit_schema=PARTITION_FIELDS, unexpected_field_behavior="ignore")
_CONFIG_JSON = pa_json.ParseOptions(explicit_schema=CONFIG_FIELDS, unexpected_field_behavior="ignore")


def _apply_partitions(reg: Registry, fields: pa.Table, api: np.ndarray) -> None:
    reg.apply_partitions(fields, api == PARTITION)


def _apply_configs(reg: Registry, fields: pa.Table, api: np.ndarray) -> None:
    reg.apply_configs(fields)


@dataclass(frozen=True)
class Target:
    offset: int | None = None  # apply records at offsets <= offset
    time_ms: int | None = None  # apply records appended at or before time_ms


def parse_time_ms(value: str) -> int:
    """Epoch milliseconds of an ISO 8601 time (UTC when it names no zone) or of a number of
    milliseconds (``--at-time``, ``sources.kraft.at_time``); :class:`ValueError` otherwise."""
    from datetime import UTC, datetime

    if value.isdigit():
        return int(value)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is neither an ISO 8601 time nor epoch milliseconds") from None
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


@dataclass
class FileRead:
    """Every record of one segment or snapshot file, in columns (the batch walk's, numba), with
    the JSON text the kernel wrote for the flat metadata record types (``fast``)."""

    path: Path
    buf: bytes
    offset: np.ndarray
    timestamp: np.ndarray  # the batch's append time
    pos: np.ndarray
    control: np.ndarray
    key_pos: np.ndarray
    key_len: np.ndarray
    val_pos: np.ndarray
    val_len: np.ndarray
    fast: np.ndarray
    api: np.ndarray
    version: np.ndarray
    text_offsets: np.ndarray
    text: np.ndarray  # uint8, ASCII
    bad: list[tuple[int, DecodeError, bytes | None]]

    def key(self, i: int) -> bytes | None:
        n = self.key_len[i]
        return None if n < 0 else self.buf[self.key_pos[i] : self.key_pos[i] + n]

    def value(self, i: int) -> bytes | None:
        n = self.val_len[i]
        return None if n < 0 else self.buf[self.val_pos[i] : self.val_pos[i] + n]


def read_records(path: Path) -> FileRead:
    walk = walk_segment(read_bytes(path))
    recs, bt = walk.records, walk.batches
    brow = walk.region_batch[recs[:, K.C_REGION]] if len(recs) else np.zeros(0, dtype=np.int64)
    control = (bt[brow, K.B_ATTRS] & ATTR_CONTROL) != 0
    val_pos, val_len = np.ascontiguousarray(recs[:, K.C_VAL_POS]), np.ascontiguousarray(recs[:, K.C_VAL_LEN])
    ops = KK.compile_ops()
    # control values are not framed: the Python decoder reads them
    offsets, text, api, ver, status = KK.transcode(walk.buf, val_pos, np.where(control, -1, val_len), ops.prog, ops.ops,
                                                   ops.text, ops.max_fields)
    return FileRead(path, walk.buf.tobytes(), recs[:, K.C_OFFSET], bt[brow, K.B_BASE_TS], recs[:, K.C_REC_POS], control,
                    recs[:, K.C_KEY_POS], recs[:, K.C_KEY_LEN], val_pos, val_len, status == KK.ST_OK, api, ver,
                    offsets, text, list(walk.bad))


@dataclass
class _Stats:
    records: int = 0
    control: int = 0
    unknown: dict[str, int] = field(default_factory=dict)  # "apiKey N vV" -> count
    applied: int = 0
    history_only: int = 0
    duplicates: int = 0

    def add(self, other: _Stats) -> None:
        for k in ("records", "control", "applied", "history_only", "duplicates"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for k, n in other.unknown.items():
            self.unknown[k] = self.unknown.get(k, 0) + n


_NAMES = np.array([M.record_name(k) for k in range(KK.MAX_KEY)], dtype=object)


def _reject(quarantined: list[dict], path: Path, pos: int, err: DecodeError | str, raw: bytes | None) -> None:
    quarantined.append(Q.row(SOURCE, Q.at(path, pos), err, raw))


@dataclass
class _Decoded:
    """Rows of one file's records (``rows``, file order), and what the replay needs."""

    table: pa.Table
    control_types: list[int]  # of each row (-1: a metadata record)
    header_ts: int | None = None


def _slow(fr: FileRead, i: int, stats: _Stats):
    """(name, apiKey, control type, version, text, raw, fields) of a record the kernel left to
    Python. Raises a DecodeError."""
    raw = None
    if fr.control[i]:
        key, value = fr.key(i), fr.value(i)
        if key is None or value is None:
            raise BadMetadataRecord("control record with a null key or value")
        ctype, version, fields = decode_control(key, value)
        msg = M.control_messages().get(ctype)
        name, api_key = (msg.name if msg else None), None
    else:
        value = fr.value(i)
        if value is None:
            raise BadMetadataRecord("metadata record with a null value")
        api_key, version, fields = decode_metadata(value)
        ctype, name = None, M.record_name(api_key)
    if fields is None:
        what = f"control type {ctype}" if ctype is not None else f"apiKey {api_key}"
        stats.unknown[f"{what} v{version}"] = stats.unknown.get(f"{what} v{version}", 0) + 1
        raw = fr.value(i)
    return name, api_key, ctype, version, None if fields is None else _json(fields), raw, fields


def _decode(fr: FileRead, sel: np.ndarray, source: str, reg: Registry | None, apply: np.ndarray | None,
            quarantine: list[dict], stats: _Stats) -> _Decoded:
    """Rows of the records ``sel`` (indexes into ``fr``, in order); applies those where ``apply``
    (a mask over ``sel``) to ``reg`` - log records with their offset and time, snapshot records
    with neither."""
    n = len(sel)
    stats.records += n
    stats.control += int(fr.control[sel].sum())
    fast = fr.fast[sel]
    api = fr.api[sel].copy()
    ctl = np.full(n, -1, dtype=np.int64)
    ver = fr.version[sel].copy()
    names = _NAMES[np.clip(api, 0, KK.MAX_KEY - 1)]
    keep = np.ones(n, dtype=bool)
    slow_rows, slow_texts, raws, slow_fields = [], [], {}, {}
    for j in np.flatnonzero(~fast).tolist():
        i = int(sel[j])
        try:
            name, api_key, ctype, version, text, raw, fields = _slow(fr, i, stats)
        except DecodeError as err:
            _reject(quarantine, fr.path, int(fr.pos[i]), err, fr.value(i))
            keep[j] = False
            continue
        names[j], api[j], ver[j] = name, -1 if api_key is None else api_key, version
        ctl[j] = -1 if ctype is None else ctype
        slow_rows.append(j)
        slow_texts.append(text)
        if raw is not None:
            raws[j] = raw
        if fields is not None:
            slow_fields[j] = fields
    header_ts = _replay_records(reg, fr, sel, source, fast, api, ctl, slow_fields, apply, stats) if reg is not None \
        else None
    starts = fr.text_offsets[sel]
    lengths = np.where(fast, fr.text_offsets[sel + 1] - starts, -1)
    text = fr.text
    if slow_rows:  # the Python decoder's texts go after the kernel's
        encoded = [None if s is None else s.encode() for s in slow_texts]
        sizes = np.array([-1 if e is None else len(e) for e in encoded], dtype=np.int64)
        starts[slow_rows] = len(text) + np.concatenate([[0], np.cumsum(np.maximum(sizes, 0))[:-1]])
        lengths[slow_rows] = sizes
        text = np.concatenate([text, np.frombuffer(b"".join(e for e in encoded if e), dtype=np.uint8)])
    record = _arrow_binary("string", text, starts, lengths)
    raw_col = [None] * n
    for j, raw in raws.items():
        raw_col[j] = raw
    table = pa.Table.from_pydict({
        "source": pa.array([source] * n, pa.string()),
        "offset": pa.array(fr.offset[sel]),
        "timestamp": pa.array(fr.timestamp[sel], pa.int64()).cast(TS),
        "record_type": pa.array(names, pa.string()),
        "api_key": pa.array(api.astype(np.int16), pa.int16(), mask=api < 0),
        "control_type": pa.array(ctl.astype(np.int16), pa.int16(), mask=ctl < 0),
        "version": pa.array(ver.astype(np.int16)),
        "record": record,
        "txn_state": pa.nulls(n, pa.string()),
        "raw": pa.array(raw_col, pa.binary()),
        "source_file": _repeat(str(fr.path), n),
        "byte_position": pa.array(fr.pos[sel]),
    })
    if not keep.all():
        table = table.filter(pa.array(keep))
    return _Decoded(redact_records(table).cast(RAW_METADATA_RECORDS), ctl[keep].tolist(), header_ts)


def _replay_records(reg: Registry, fr: FileRead, sel: np.ndarray, source: str, fast: np.ndarray, api: np.ndarray,
                    ctl: np.ndarray, slow_fields: dict[int, dict], apply: np.ndarray | None,
                    stats: _Stats) -> int | None:
    """Apply the records ``sel`` of ``fr`` (where ``apply``) to ``reg`` in log order; returns
    the snapshot header's time when there is one.

    The kernel-decoded PartitionRecords / PartitionChangeRecords (nearly all of a busy log) and
    ConfigRecords are applied in runs (:meth:`Registry.apply_partitions`,
    :meth:`Registry.apply_configs`: their JSON lines read by Arrow): a run ends at a record that
    touches partitions or configs otherwise (RemoveTopic, ClearElr, the transaction markers, a
    partition or config record only Python decodes). Every other record between them changes
    neither, so it is applied one by one (parsed back from its JSON) without changing the
    result; inside a metadata transaction everything goes one by one (it may abort)."""
    n = len(sel)
    wanted = (fast & np.isin(api, STATEFUL)) | np.isin(np.arange(n), list(slow_fields))
    if apply is not None:
        wanted &= apply
    rows = np.flatnonzero(wanted)
    if not len(rows):
        return None
    partition = np.isin(api[rows], PARTITION_KEYS) & (ctl[rows] < 0)
    config = (api[rows] == CONFIG) & (ctl[rows] < 0) & fast[rows]
    batched = partition & fast[rows] | config
    # Python-decoded partition and config records keep their place: they end a run too
    slow = np.isin(api[rows], (PARTITION, PARTITION_CHANGE, CONFIG)) & (ctl[rows] < 0) & ~fast[rows]
    barrier = np.isin(api[rows], BARRIERS) & (ctl[rows] < 0) | slow
    text, starts = fr.text, fr.text_offsets
    header_ts = None

    def one(j: int) -> None:
        nonlocal header_ts
        fields = slow_fields.get(j)
        if fields is None:
            i = sel[j]
            fields = json.loads(text[starts[i] : starts[i + 1]].tobytes())
        if ctl[j] >= 0:
            if ctl[j] == LEADER_CHANGE:
                reg.leader_change(fields["leaderId"])
            elif ctl[j] == SNAPSHOT_HEADER:
                header_ts = fields["lastContainedLogTimestamp"]
            return
        if source == "log":
            reg.apply(int(api[j]), fields, int(fr.offset[sel[j]]), int(fr.timestamp[sel[j]]))
        else:  # a snapshot's records carry the snapshot's time, not their own: neither is kept
            reg.apply(int(api[j]), fields, None, None)
        stats.applied += 1

    cuts = np.flatnonzero(barrier)
    for lo, hi in zip(np.r_[0, cuts + 1].tolist(), np.r_[cuts, len(rows)].tolist(), strict=True):
        run = rows[lo:hi]
        if len(run) and (reg.in_txn or not batched[lo:hi].any()):
            for j in run.tolist():
                one(j)
        elif len(run):
            for j in run[~batched[lo:hi]].tolist():
                one(j)
            for kind, parse, use in ((partition, _PARTITION_JSON, _apply_partitions),
                                     (config, _CONFIG_JSON, _apply_configs)):
                mine = run[(batched & kind)[lo:hi]]
                if len(mine):
                    lines = KK.gather_lines(fr.text, fr.text_offsets, sel[mine])
                    use(reg, pa_json.read_json(pa.BufferReader(pa.py_buffer(lines)), parse_options=parse), api[mine])
                    stats.applied += len(mine)
            last = int(run[ctl[run] < 0][-1])  # control records mark nothing
            at = sel[last]
            reg.last_offset, reg.last_timestamp = ((int(fr.offset[at]), int(fr.timestamp[at])) if source == "log"
                                                   else (None, None))
        if hi < len(rows):
            one(int(rows[hi]))
    return header_ts


def _load_snapshot(snap: Snapshot, target: Target, quarantine: list[dict], stats: _Stats):
    """(registry, rows) of a usable snapshot, else why it is not used (its bad parts and the
    reason quarantined)."""
    fr = read_records(snap.path)
    own_q, own_stats, reg = [], _Stats(), Registry()
    for pos, err, raw in fr.bad:
        _reject(own_q, snap.path, pos, err, raw)
    done = _decode(fr, np.arange(len(fr.offset)), "snapshot", reg, None, own_q, own_stats)
    kinds = done.control_types
    why = None
    if own_q:
        why = "it has corrupt parts"
    elif not kinds or kinds[0] != SNAPSHOT_HEADER:
        why = "it does not start with a snapshot header"
    elif kinds[-1] != SNAPSHOT_FOOTER:
        why = "it does not end with a snapshot footer (incomplete)"
    elif target.time_ms is not None and done.header_ts > target.time_ms:
        return "its last record is after --at-time"
    if why is not None:
        quarantine += own_q
        _reject(quarantine, snap.path, 0, f"SnapshotSkipped: {why}", None)
        return why
    stats.add(own_stats)
    reg.last_offset, reg.last_timestamp = snap.end_offset - 1, done.header_ts
    return reg, done.table


def _txn_states(tables: list[pa.Table]) -> list[pa.Table]:
    """``txn_state`` of the log rows: 'aborted' between BeginTransaction and AbortTransaction,
    'pending' after a BeginTransaction that never ends."""
    api = np.concatenate([t["api_key"].fill_null(-1).to_numpy() for t in tables]) if tables else np.zeros(0)
    markers = np.flatnonzero(np.isin(api, (BEGIN_TXN, END_TXN, ABORT_TXN)))
    if not len(markers):
        return tables
    state = np.full(len(api), None, dtype=object)
    begin = None
    for m in markers.tolist():
        if api[m] == BEGIN_TXN:
            begin = m
        elif begin is not None:
            if api[m] == ABORT_TXN:
                state[begin + 1 : m] = "aborted"
            begin = None
    if begin is not None:
        state[begin + 1 :] = "pending"
    out, at = [], 0
    for t in tables:
        col = pa.array(state[at : at + t.num_rows], pa.string())
        out.append(t.set_column(t.schema.get_field_index("txn_state"), "txn_state", col))
        at += t.num_rows
    return out


@dataclass
class Replayed:
    registry: Registry
    snapshot: Snapshot | None
    stats: _Stats
    quarantine: list[dict]
    reached: bool  # the log reached the target (or its end without a target)
    gap: str | None


def replay(files: MetadataFiles, target: Target, writer, say=lambda m: None, advance=lambda: None) -> Replayed:
    """Read the snapshot and the log, writing ``raw/metadata_records`` rows through ``writer``."""
    quarantine, stats = [], _Stats()
    reg, chosen, start, snap_rows = None, None, 0, None
    for snap in reversed(files.snapshots):
        if target.offset is not None and snap.end_offset > target.offset + 1:
            continue
        got = _load_snapshot(snap, target, quarantine, stats)
        advance()
        if isinstance(got, str):
            say(f"kraft: snapshot {snap.path.name} not used: {got}")
            continue
        (reg, snap_rows), chosen, start = got, snap, snap.end_offset
        break
    reg = reg or Registry()
    if snap_rows is not None:
        writer.write(snap_rows)
    log_rows: list[pa.Table] = []
    last, reached, gap = start - 1, False, None
    for seg in files.segments:
        fr = read_records(seg)
        advance()
        for pos, err, raw in fr.bad:
            _reject(quarantine, seg, pos, err, raw)
        off, ts = fr.offset, fr.timestamp
        within = np.ones(len(off), dtype=bool)
        if target.offset is not None:
            within &= off <= target.offset
        if target.time_ms is not None:
            within &= ts <= target.time_ms
        cut = int(np.argmin(within)) if not within.all() else len(off)
        # a gap is reported up to the first record past the target
        new = np.flatnonzero((off[: cut + 1] >= start) & (off[: cut + 1] > last))
        if gap is None and len(new):
            expect = last + 1 + np.arange(len(new))
            jump = np.flatnonzero(off[new] != expect)
            if len(jump):
                k = int(new[jump[0]])
                gap = (f"offsets {int(expect[jump[0]])}..{int(off[k]) - 1} are in no file read "
                       f"(the log continues at {seg}:{int(fr.pos[k])})")
                _reject(quarantine, seg, int(fr.pos[k]), f"MissingRecords: {gap}; the state lacks their changes", None)
        head = np.arange(cut)
        history = off[:cut] < start
        fresh = ~history & (off[:cut] > last)
        stats.history_only += int(history.sum())
        stats.duplicates += int((~history & ~fresh).sum())
        sel = head[history | fresh]
        done = _decode(fr, sel, "log", reg, fresh[history | fresh], quarantine, stats)
        log_rows.append(done.table)
        if fresh.any():
            last = max(last, int(off[:cut][fresh].max()))
        if cut < len(off):
            reached = True
            break
    for table in _txn_states(log_rows):
        writer.write(table)
    if target.offset is None and target.time_ms is None:
        reached = True
    return Replayed(reg, chosen, stats, quarantine, reached, gap)


# --- the registry as tables ---------------------------------------------------------------------


def _endpoint(e: dict) -> str:
    return f"{e['name']}://{e['host']}:{e['port']}"


def registry_tables(reg: Registry, cluster_id: str | None, snapshot: Snapshot | None) -> dict[str, pa.Table]:
    brokers = []
    for b in sorted(reg.brokers.values(), key=lambda b: b["broker_id"]):
        first = b["endpoints"][0] if b["endpoints"] else None
        brokers.append({
            "broker_id": b["broker_id"], "host": first and first["host"], "port": first and first["port"],
            "endpoints": [_endpoint(e) for e in b["endpoints"]], "rack": b["rack"], "fenced": b["fenced"],
            "in_controlled_shutdown": b["in_controlled_shutdown"], "broker_epoch": b["broker_epoch"],
            "incarnation_id": b["incarnation_id"], "log_dirs": b["log_dirs"],
        })
    partitions = []
    for tid, parts in reg.partitions.items():
        for pid, p in sorted(parts.items()):
            partitions.append({"topic": reg.topics.get(tid), "topic_id": tid, "partition": pid, **p})
    partitions.sort(key=lambda p: (p["topic"] or "", p["partition"]))
    configs = [
        {"resource_type": RESOURCE_TYPES.get(t, str(t)), "resource_name": name, "name": key,
         "value": REDACTED if value is not None and secret_config(key) else value}
        for (t, name, key), value in sorted(reg.configs.items())
    ]
    cluster = [{
        "cluster_id": cluster_id, "controller_id": reg.controller_id, "metadata_offset": reg.last_offset,
        "metadata_timestamp": reg.last_timestamp, "snapshot": snapshot.path.name if snapshot else None,
        "features": sorted(reg.features.items()),
    }]
    topics = sorted(reg.topic_history.values(), key=lambda t: (t["topic"], t["created_offset"] or -1))

    def table(rows: list[dict], schema: pa.Schema) -> pa.Table:
        ts = [f.name for f in schema if f.type == TS]
        plain = schema
        for name in ts:
            plain = plain.set(plain.get_field_index(name), pa.field(name, pa.int64()))
        out = pa.Table.from_pylist(rows, schema=plain)
        for name in ts:
            out = out.set_column(out.schema.get_field_index(name), name, out[name].cast(TS))
        return out

    return {
        "raw/kraft_brokers": table(brokers, RAW_KRAFT_BROKERS),
        "raw/kraft_topics": table(topics, RAW_KRAFT_TOPICS),
        "raw/kraft_partitions": table(partitions, RAW_KRAFT_PARTITIONS),
        "raw/kraft_configs": table(configs, RAW_KRAFT_CONFIGS),
        "raw/kraft_cluster": table(cluster, RAW_KRAFT_CLUSTER),
    }


# --- the step --------------------------------------------------------------------------------------


def extract_kraft(ctx: RunContext, paths: list[Path], target: Target = Target()) -> dict:
    """Read KRaft metadata under ``paths`` into the run's raw tables (one transaction)."""
    files = metadata_files(paths)
    ctx.say(f"kraft: {len(files.segments)} segment(s), {len(files.snapshots)} snapshot(s)")
    with ctx.warehouse.transaction(ctx.run_id, step=STEP) as tx, ctx.progress() as bar:
        task = bar.add_task("decoding metadata", total=len(files.segments) + len(files.snapshots))
        writer = tx.writer("raw/metadata_records", dictionary=["source", "record_type", "txn_state", "source_file"])
        done = replay(files, target, writer, ctx.say, lambda: bar.advance(task))
        if done.stats.records == 0 and not done.quarantine:
            raise InputError(f"{paths[0]}: no metadata records in {len(files.segments) + len(files.snapshots)} file(s) "
                             f"(expected a KRaft metadata log)")
        for table, data in registry_tables(done.registry, files.cluster_id, done.snapshot).items():
            tx.write(table, data)
            tx.writer(table)
        tx.writer("raw/quarantine")
        if done.quarantine:
            tx.write("raw/quarantine", Q.table(done.quarantine))
    reg, s = done.registry, done.stats
    live = sum(len(p) for p in reg.partitions.values())
    unknown = sum(s.unknown.values())
    meta = {
        "segments": len(files.segments), "snapshots": len(files.snapshots),
        "snapshot": done.snapshot.path.name if done.snapshot else None,
        "records": s.records, "control_records": s.control, "applied": s.applied, "history_only": s.history_only,
        "duplicates": s.duplicates, "unknown": s.unknown, "aborted": reg.aborted, "pending": len(reg.pending),
        "target_offset": target.offset, "target_time_ms": target.time_ms, "metadata_offset": reg.last_offset,
        "brokers": len(reg.brokers), "topics": len(reg.topics), "partitions": live, "configs": len(reg.configs),
        "quarantined": len(done.quarantine), "gap": done.gap,
    }
    ctx.warehouse.write_meta(ctx.run_id, STEP, meta)
    start = f"snapshot {done.snapshot.path.name}" if done.snapshot else "an empty registry (no snapshot)"
    ctx.say(f"kraft: {s.records} records ({s.control} control) from {start} and the log; "
            f"state at offset {reg.last_offset}: {len(reg.brokers)} brokers, {len(reg.topics)} topics, "
            f"{live} partitions, {len(reg.configs)} configs")
    if unknown or reg.aborted or reg.pending:
        ctx.say(f"kraft: {unknown} record(s) of unknown type kept raw, {reg.aborted} record(s) of aborted and "
                f"{len(reg.pending)} of unfinished metadata transactions not applied")
    if not done.reached:
        ctx.say(f"kraft: [yellow]warning[/]: the log ends at offset {reg.last_offset}, before the target")
    if done.gap:
        ctx.say(f"kraft: [yellow]warning[/]: {done.gap}")
    return meta
