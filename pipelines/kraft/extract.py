"""``kaudit extract kraft``: KRaft metadata segments and snapshots -> ``raw/metadata_records``
and the replayed registry (``raw/kraft_brokers``, ``raw/kraft_topics``,
``raw/kraft_partitions``, ``raw/kraft_configs``, ``raw/kraft_cluster``).

The files are ordinary magic-2 segments: the batch walk is kaudit's
(:func:`pipelines.kafka.batches.walk_segment`, numba); the values of the flat record types (all
the frequent ones) become their JSON text in a numba kernel (:mod:`pipelines.kraft.kernels`),
parsed back only for the records the replay applies; every other value is decoded by
:mod:`pipelines.kraft.decode`. Both read the same field tables. The replay starts from the newest usable snapshot at or before
the target (a header control record first, a footer last, nothing corrupt; ``--at-time``: its
header's ``LastContainedLogTimestamp`` at or before the time) and applies the log records from
the snapshot's end offset on, to the end of the log or to the target (``--at-offset N``: every
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

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.kafka import kernels as K
from pipelines.kafka.batches import ATTR_CONTROL, walk_segment
from pipelines.kafka.errors import DecodeError
from pipelines.kafka.segment import read_bytes
from pipelines.kraft import kernels as KK
from pipelines.kraft import messages as M
from pipelines.kraft.decode import BadMetadataRecord, decode_control, decode_metadata
from pipelines.kraft.files import MetadataFiles, Snapshot, metadata_files
from pipelines.kraft.replay import ABORT_TXN, BEGIN_TXN, END_TXN, REPLAYED, RESOURCE_TYPES, Registry
from pipelines.tables import (
    RAW_KRAFT_BROKERS,
    RAW_KRAFT_CLUSTER,
    RAW_KRAFT_CONFIGS,
    RAW_KRAFT_PARTITIONS,
    RAW_KRAFT_TOPICS,
    RAW_METADATA_RECORDS,
    RAW_QUARANTINE,
    TS,
)

STEP = "extract_kraft"
SOURCE = "kraft"
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4
FLUSH_ROWS = 200_000
_json = json.JSONEncoder(separators=(",", ":")).encode  # one encoder (json.dumps with options makes one per call)
_NOT_PARSED = {}  # a decoded record whose fields the replay does not need
STATEFUL = frozenset(REPLAYED) | {BEGIN_TXN, END_TXN, ABORT_TXN}


@dataclass(frozen=True)
class Target:
    offset: int | None = None  # apply records at offsets <= offset
    time_ms: int | None = None  # apply records appended at or before time_ms

    def before(self, offset: int, timestamp: int) -> bool:
        """Whether a log record is within the target."""
        if self.offset is not None and offset > self.offset:
            return False
        return self.time_ms is None or timestamp <= self.time_ms


@dataclass
class Record:
    offset: int
    timestamp: int
    pos: int
    control: bool
    key: bytes | None
    value: bytes | None
    text: str | None = None  # the fields as JSON, when the kernel decoded the record
    api_key: int = -1
    version: int = -1


@dataclass
class FileRead:
    path: Path
    records: list[Record]
    bad: list[tuple[int, DecodeError, bytes | None]]


def read_records(path: Path) -> FileRead:
    """Every record of one segment or snapshot file, through the batch walk (numba); the values
    of the flat metadata record types transcoded to JSON by :func:`pipelines.kraft.kernels.transcode`."""
    walk = walk_segment(read_bytes(path))
    buf = walk.buf.tobytes()
    recs, bt = walk.records, walk.batches
    brow = walk.region_batch[recs[:, K.C_REGION]] if len(recs) else np.zeros(0, dtype=np.int64)
    is_control = (bt[brow, K.B_ATTRS] & ATTR_CONTROL) != 0
    val_len = np.where(is_control, -1, recs[:, K.C_VAL_LEN])  # control values are not framed: Python reads them
    ops = KK.compile_ops()
    offsets, data, api, ver, status = KK.transcode(
        walk.buf, np.ascontiguousarray(recs[:, K.C_VAL_POS]), np.ascontiguousarray(val_len), ops.prog, ops.ops, ops.text,
        ops.max_fields)
    text = data.tobytes().decode("ascii")
    fast = (status == KK.ST_OK).tolist()
    starts, ends = offsets[:-1].tolist(), offsets[1:].tolist()
    cols = [recs[:, c].tolist() for c in (K.C_OFFSET, K.C_KEY_POS, K.C_KEY_LEN, K.C_VAL_POS, K.C_VAL_LEN, K.C_REC_POS)]
    out = [
        Record(off, t, rp, c, None if kl < 0 else buf[kp : kp + kl], None if vl < 0 else buf[vp : vp + vl],
               text[s:e] if f else None, a, v)
        for off, kp, kl, vp, vl, rp, c, t, f, s, e, a, v in zip(
            *cols, is_control.tolist(), bt[brow, K.B_BASE_TS].tolist(), fast, starts, ends, api.tolist(), ver.tolist())
    ]
    return FileRead(path, out, list(walk.bad))


@dataclass
class _Rows:
    """raw/metadata_records rows in columns, flushed to the writer between transactions."""

    cols: dict[str, list] = field(default_factory=lambda: {n: [] for n in RAW_METADATA_RECORDS.names})
    txn_rows: list[int] | None = None  # rows inside the open metadata transaction
    written: int = 0

    def add(self, **row) -> int:
        for k, v in row.items():
            self.cols[k].append(v)
        return len(self.cols["offset"]) - 1

    def table(self) -> pa.Table:
        cols = dict(self.cols)
        cols["timestamp"] = pa.array(cols["timestamp"], pa.int64()).cast(TS)
        return pa.Table.from_pydict(cols, schema=RAW_METADATA_RECORDS)

    def flush(self, writer, force: bool = False) -> None:
        n = len(self.cols["offset"])
        if n and (force or (n >= FLUSH_ROWS and self.txn_rows is None)):
            if force and self.txn_rows is not None:
                for i in self.txn_rows:
                    self.cols["txn_state"][i] = "pending"
            writer.write(self.table())
            self.written += n
            self.cols = {k: [] for k in self.cols}


@dataclass
class _Stats:
    records: int = 0
    control: int = 0
    unknown: dict[str, int] = field(default_factory=dict)  # "apiKey N vV" -> count
    applied: int = 0
    history_only: int = 0
    duplicates: int = 0


class _Reader:
    """Decodes records into rows, the registry and the quarantine."""

    def __init__(self, rows: _Rows, quarantine: list[dict], stats: _Stats):
        self.rows, self.quarantine, self.stats = rows, quarantine, stats

    def reject(self, path: Path, pos: int, err: DecodeError | str, raw: bytes | None) -> None:
        reason = f"{type(err).__name__}: {err}" if isinstance(err, DecodeError) else err
        self.quarantine.append({"source": SOURCE, "location": f"{path}:{pos}", "reason": reason, "raw": raw})

    def record(self, path: Path, r: Record, source: str, reg: Registry | None, offset_for_state: int | None):
        """Decode one record, add its row and apply it to ``reg`` (None: history only).
        Returns (control type or None, fields) or None when quarantined."""
        self.stats.records += 1
        raw = None
        try:
            if r.control:
                self.stats.control += 1
                if r.key is None or r.value is None:
                    raise BadMetadataRecord("control record with a null key or value")
                ctype, version, fields = decode_control(r.key, r.value)
                msg = M.control_messages().get(ctype)
                name, api_key, control_type = (msg.name if msg else None), None, ctype
            elif r.text is not None:  # decoded by the kernel: parsed back only when the replay needs it
                api_key, version, ctype, control_type, name = r.api_key, r.version, None, None, M.record_name(r.api_key)
                text = r.text
                fields = json.loads(text) if reg is not None and api_key in STATEFUL else _NOT_PARSED
            else:
                if r.value is None:
                    raise BadMetadataRecord("metadata record with a null value")
                api_key, version, fields = decode_metadata(r.value)
                ctype, control_type, name = None, None, M.record_name(api_key)
        except DecodeError as err:
            self.reject(path, r.pos, err, r.value)
            return None
        if r.text is None:
            text = None if fields is None else _json(fields)
        if fields is None:
            what = f"control type {ctype}" if r.control else f"apiKey {api_key}"
            key = f"{what} v{version}"
            self.stats.unknown[key] = self.stats.unknown.get(key, 0) + 1
            raw = r.value
        row = self.rows.add(
            source=source, offset=r.offset, timestamp=r.timestamp, record_type=name, api_key=api_key,
            control_type=control_type, version=version,
            record=text,
            txn_state=None, raw=raw, source_file=str(path), byte_position=r.pos,
        )
        if source == "log":
            self._track_txn(api_key, row)
        if reg is not None and fields is not None and fields is not _NOT_PARSED:
            if r.control:
                if ctype == LEADER_CHANGE:
                    reg.leader_change(fields["leaderId"])
            else:
                # a snapshot's records carry the snapshot's time, not their own: neither is kept
                reg.apply(api_key, fields, offset_for_state, None if offset_for_state is None else r.timestamp)
                self.stats.applied += 1
        return ctype, fields

    def _track_txn(self, api_key: int | None, row: int) -> None:
        rows = self.rows
        if api_key == BEGIN_TXN:
            rows.txn_rows = []
        elif api_key == END_TXN:
            rows.txn_rows = None
        elif api_key == ABORT_TXN:
            for i in rows.txn_rows or []:
                rows.cols["txn_state"][i] = "aborted"
            rows.txn_rows = None
        elif rows.txn_rows is not None:
            rows.txn_rows.append(row)


def _load_snapshot(reader: _Reader, snap: Snapshot, target: Target) -> tuple[Registry, int] | str:
    """(registry, LastContainedLogTimestamp) of a usable snapshot, else why it is not used (its
    bad parts quarantined). Its rows are kept only when it is used."""
    read = read_records(snap.path)
    mark = len(reader.rows.cols["offset"]), len(reader.quarantine), reader.stats.records, reader.stats.control
    reg = Registry()
    header_ts = None
    kinds = []
    for pos, err, raw in read.bad:
        reader.reject(snap.path, pos, err, raw)
    for r in read.records:
        got = reader.record(snap.path, r, "snapshot", reg, None)
        kinds.append(got[0] if got else -1)
        if got and got[0] == SNAPSHOT_HEADER and got[1] is not None:
            header_ts = got[1]["lastContainedLogTimestamp"]
    why = None
    if read.bad or -1 in kinds:
        why = "it has corrupt parts"
    elif not kinds or kinds[0] != SNAPSHOT_HEADER:
        why = "it does not start with a snapshot header"
    elif kinds[-1] != SNAPSHOT_FOOTER:
        why = "it does not end with a snapshot footer (incomplete)"
    elif target.time_ms is not None and header_ts > target.time_ms:
        why = "its last record is after --at-time"
    if why is not None:
        rows, q, n, c = mark
        for col in reader.rows.cols.values():
            del col[rows:]
        reader.stats.records, reader.stats.control = n, c
        if why == "its last record is after --at-time":
            del reader.quarantine[q:]
        else:
            reader.reject(snap.path, 0, f"SnapshotSkipped: {why}", None)
        return why
    reg.last_offset, reg.last_timestamp = snap.end_offset - 1, header_ts
    return reg, header_ts


@dataclass
class Replayed:
    registry: Registry
    snapshot: Snapshot | None
    files: MetadataFiles
    stats: _Stats
    quarantine: list[dict]
    rows_written: int
    reached: bool  # the log reached the target (or its end without a target)
    gap: str | None


def replay(files: MetadataFiles, target: Target, writer, say=lambda m: None, advance=lambda: None) -> Replayed:
    """Read the snapshot and the log, writing ``raw/metadata_records`` rows through ``writer``."""
    rows, quarantine, stats = _Rows(), [], _Stats()
    reader = _Reader(rows, quarantine, stats)
    reg, chosen, start = None, None, 0
    for snap in reversed(files.snapshots):
        if target.offset is not None and snap.end_offset > target.offset + 1:
            continue
        got = _load_snapshot(reader, snap, target)
        advance()
        if isinstance(got, str):
            say(f"kraft: snapshot {snap.path.name} not used: {got}")
            continue
        reg, chosen, start = got[0], snap, snap.end_offset
        break
    reg = reg or Registry()
    rows.flush(writer)
    last, reached, gap = start - 1, False, None
    for seg in files.segments:
        read = read_records(seg)
        advance()
        for pos, err, raw in read.bad:
            reader.reject(seg, pos, err, raw)
        for r in read.records:
            if r.offset > last + 1 and gap is None and r.offset >= start:
                gap = f"offsets {last + 1}..{r.offset - 1} are in no file read (the log continues at {seg}:{r.pos})"
                reader.reject(seg, r.pos, f"MissingRecords: {gap}; the state lacks their changes", None)
            if not target.before(r.offset, r.timestamp):
                reached = True
                break
            if r.offset < start:
                stats.history_only += 1
                reader.record(seg, r, "log", None, None)
                continue
            if r.offset <= last:
                stats.duplicates += 1  # the same offset in two files (copies of one log)
                continue
            last = r.offset
            reader.record(seg, r, "log", reg, r.offset)
            rows.flush(writer)
        if reached:
            break
    rows.flush(writer, force=True)
    if target.offset is None and target.time_ms is None:
        reached = True
    return Replayed(reg, chosen, files, stats, quarantine, rows.written, reached, gap)


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
        {"resource_type": RESOURCE_TYPES.get(t, str(t)), "resource_name": name, "name": key, "value": value}
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
            tx.write("raw/quarantine", pa.Table.from_pylist(done.quarantine, schema=RAW_QUARANTINE))
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
