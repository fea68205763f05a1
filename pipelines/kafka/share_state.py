"""The ``__share_group_state`` topic (KIP-932): the share coordinator's ShareSnapshot and
ShareUpdate records of every share-partition, into ``raw/share_partition_states`` (one row per
record, its state batches nested) and, for records that do not decode, ``raw/quarantine``.

Sources: Apache Kafka 4.2.2's ``kafka-share-coordinator`` jar, ``common/message/Share{Snapshot,
Update}{Key,Value}.json`` (copied unchanged in ``schemas/``, see ``schemas/SHARE_STATE_SOURCES.md``);
``share-coordinator/.../ShareCoordinatorShard.java`` and ``PersisterStateBatchCombiner.java``
(how an update applies to the snapshot before it); ``server-common/.../share/persister/
PersisterStateBatch`` and ``RecordState`` (delivery states 0 available, 1 acquired, 2
acknowledged, 4 archived).

Grammar (big-endian)::

    key   = int16 type (0 ShareSnapshot, 1 ShareUpdate), then non-flexible v0:
            int16 length + UTF-8 GroupId, 16 bytes TopicId, int32 Partition; nothing may follow
    value = int16 version (0), flexible struct of ``Share{Snapshot,Update}Value.json``
            (``pipelines.kafka.flexible``) | null: a tombstone, the share-partition's state is deleted

Replaying (``pipelines.spark.share_streams``): the state of a share-partition is its last
ShareSnapshot with the ShareUpdates after it applied in log order: an update's batches replace
the snapshot's state of the offsets they cover, its start offset (-1: unchanged) moves the
start, and offsets below the start are no longer tracked. The coordinator prunes the topic below
the latest snapshot, so records before a partition's first snapshot in the files cannot be
replayed: ``is_replayable`` is false on them, and a share-partition with no snapshot in the
files has unknown state.

The topic holds one record per share-partition write (a few per acknowledgement round), far
fewer than offset commits: one Python decode per record, after the numba batch walk.
"""

from __future__ import annotations

import base64
import struct
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines.kafka import kernel_tables as K
from pipelines.kafka.batches import ATTR_CONTROL, walk_segment
from pipelines.kafka.errors import DecodeError
from pipelines.kafka.flexible import Layout, decode_struct, message, read_schema
from pipelines.kafka.paths import PARTITION_DIR, base_offset_of, neighbours, partition_dirs, segment_files
from pipelines.kafka.segment import read_bytes
from pipelines.warehouse import quarantine as Q
from pipelines.warehouse.tables import RAW_SHARE_PARTITION_STATES

SHARE_STATE_TOPIC = "__share_group_state"
SCHEMA_DIR = Path(__file__).parent / "schemas"
TABLE = "raw/share_partition_states"
SOURCE = "offsets"
RECORD_TYPES = {0: "ShareSnapshot", 1: "ShareUpdate"}
# RecordState of server-common's share persister: the delivery state of a state batch
DELIVERY_STATES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


@cache
def value_layout(key_type: int, version: int) -> Layout | None:
    """The field table of a ShareSnapshot/ShareUpdate value; None for a version no schema knows."""
    return message(read_schema(SCHEMA_DIR / f"{RECORD_TYPES[key_type]}Value.json")).layout(version)


def decode_key(key: bytes) -> tuple[int, str, str, int]:
    """(type, group id, topic id, partition) of a ``__share_group_state`` key; raises DecodeError."""
    if key is None or len(key) < 2:
        raise DecodeError(f"key of {0 if key is None else len(key)} bytes has no type")
    kind = _INT16.unpack_from(key, 0)[0]
    if kind not in RECORD_TYPES:
        raise DecodeError(f"key type {kind} is neither ShareSnapshot (0) nor ShareUpdate (1)")
    if len(key) < 4:
        raise DecodeError("key ends before its group id")
    n = _INT16.unpack_from(key, 2)[0]
    if n < 0:
        raise DecodeError("null group id")
    end = 4 + n + 16 + 4
    if len(key) != end:
        raise DecodeError(f"key of {len(key)} bytes, its group id of {n} bytes needs {end}")
    try:
        group = key[4 : 4 + n].decode("utf-8")
    except UnicodeDecodeError as err:
        raise DecodeError(f"group id is not UTF-8 ({err.reason})") from None
    topic_id = base64.urlsafe_b64encode(key[4 + n : 20 + n])[:22].decode("ascii")
    return kind, group, topic_id, _INT32.unpack_from(key, 20 + n)[0]


def decode_value(kind: int, value: bytes) -> tuple[int, dict | None]:
    """(version, fields) of a value; fields None for a version the schemas do not know. Raises
    DecodeError when a known version does not decode."""
    if len(value) < 2:
        raise DecodeError(f"value of {len(value)} bytes has no version")
    version = _INT16.unpack_from(value, 0)[0]
    layout = value_layout(kind, version) if version >= 0 else None
    if layout is None:
        return version, None
    return version, decode_struct(value, 2, layout, f"{RECORD_TYPES[kind]}Value v{version}")


def _batches(items: list[dict] | None) -> list[dict]:
    return [dict(first_offset=b["firstOffset"], last_offset=b["lastOffset"], delivery_state=b["deliveryState"],
                 delivery_state_name=DELIVERY_STATES.get(b["deliveryState"], f"state {b['deliveryState']}"),
                 delivery_count=b["deliveryCount"]) for b in items or []]


def record_row(kind: int, group: str, topic_id: str, partition: int, version: int | None, v: dict | None,
               value: bytes | None) -> dict:
    """The row of one decoded record (``v`` None: a tombstone, or a value kept raw)."""
    v = v or {}
    return dict(
        record_type=RECORD_TYPES[kind],
        group_id=group,
        topic_id=topic_id,
        partition=partition,
        is_tombstone=value is None,
        value_version=version,
        snapshot_epoch=v.get("snapshotEpoch"),
        state_epoch=v.get("stateEpoch"),
        leader_epoch=v.get("leaderEpoch"),
        start_offset=v.get("startOffset"),
        delivery_complete_count=v.get("deliveryCompleteCount"),
        create_timestamp=v.get("createTimestamp"),
        write_timestamp=v.get("writeTimestamp"),
        state_batches=_batches(v.get("stateBatches")) if v else None,
        unknown_tagged_fields=None if "_unknownTaggedFields" not in v else str(v["_unknownTaggedFields"]),
        value=value if value is not None and not v else None,
    )


def decode_segment(path: Path, state_partition: int) -> tuple[list[dict], list[dict], dict[str, int]]:
    """(rows, quarantine rows, stats) of one ``__share_group_state`` segment."""
    walk = walk_segment(read_bytes(path))
    buf = walk.buf.tobytes()
    rows, bad = [], []
    for pos, err, raw in walk.bad:
        bad.append(Q.row(SOURCE, Q.at(path, pos), err, raw))
    recs, bt = walk.records, walk.batches
    stats = {"share_state_files": 1, "share_state_batches": walk.good_batches, "share_state_records": 0}
    if not len(recs):
        return rows, bad, stats
    brow = walk.region_batch[recs[:, K.C_REGION]]
    control = (bt[brow, K.B_ATTRS] & ATTR_CONTROL) != 0
    for i in np.flatnonzero(~control):
        r = recs[i]
        kl, vl = int(r[K.C_KEY_LEN]), int(r[K.C_VAL_LEN])
        key = None if kl < 0 else buf[r[K.C_KEY_POS] : r[K.C_KEY_POS] + kl]
        value = None if vl < 0 else buf[r[K.C_VAL_POS] : r[K.C_VAL_POS] + vl]
        place = dict(state_partition=state_partition, log_offset=int(r[K.C_OFFSET]), segment_file=str(path),
                     batch_timestamp=int(bt[brow[i], K.B_BASE_TS]), batch_offset=int(bt[brow[i], K.B_BASE_OFFSET]))
        where = Q.at(path, int(r[K.C_REC_POS]))
        try:
            kind, group, topic_id, partition = decode_key(key)
        except DecodeError as err:
            bad.append(Q.row(SOURCE, where, f"UndecodableKey: share state key: {err}", key))
            continue
        version, fields = None, None
        if value is not None:
            try:
                version, fields = decode_value(kind, value)
            except DecodeError as err:
                # another layout under a known version (Kafka 4.0's preview): kept raw, and said
                bad.append(Q.row(SOURCE, where, f"UndecodableValue: {RECORD_TYPES[kind]}Value: {err}", value))
                version = _INT16.unpack_from(value, 0)[0] if len(value) >= 2 else None
        rows.append({**record_row(kind, group, topic_id, partition, version, fields, value), **place})
        stats["share_state_records"] += 1
    return rows, bad, stats


def share_state_segments(paths: list[Path]) -> list[tuple[int, Path]]:
    """(state partition, segment) of every ``__share_group_state`` segment under ``paths``."""
    return topic_segments(paths, SHARE_STATE_TOPIC)


def topic_segments(paths: list[Path], topic: str) -> list[tuple[int, Path]]:
    """(partition, segment) of every segment of ``topic`` under ``paths`` (log dirs or its
    partition dirs), in log order; of a partition held by several log dirs (replicas), the one
    whose log goes furthest."""
    replicas: dict[int, dict[Path, list[Path]]] = {}
    for p in map(Path, paths):
        if not p.is_dir():
            continue
        m = PARTITION_DIR.match(p.name)
        if m and m["topic"] == topic:
            dirs = [(int(m["partition"]), p)]
        elif m:
            continue
        else:
            dirs = [(n, d) for t, n, d in partition_dirs(p) if t == topic]
        for n, d in dirs:
            replicas.setdefault(n, {}).setdefault(d.resolve(), segment_files(d))
    out = []
    for n in sorted(replicas):
        _, files = max(replicas[n].items(), key=_extent)
        out += [(n, f) for f, _, _ in neighbours(files)]
    return out


def _extent(item: tuple[Path, list[Path]]) -> tuple:
    """How far a replica's log goes: (last segment's base offset, its size), then its dir."""
    d, files = item
    return ((base_offset_of(files[-1]), files[-1].stat().st_size) if files else (-1, -1), str(d))


def with_replayable(rows: list[dict]) -> list[dict]:
    """Marks ``is_replayable``: a record at or after its share-partition's first ShareSnapshot
    (in log order of its state partition); the records before it build on a pruned snapshot."""
    seen: set[tuple] = set()
    for row in sorted(rows, key=lambda r: (r["state_partition"], r["log_offset"])):
        k = (row["group_id"], row["topic_id"], row["partition"])
        if row["record_type"] == "ShareSnapshot" and not row["is_tombstone"] and row["value_version"] is not None \
                and row["state_batches"] is not None:
            seen.add(k)
        elif row["is_tombstone"]:
            seen.discard(k)  # the state is deleted: a later update has nothing to apply to
            row["is_replayable"] = True
            continue
        row["is_replayable"] = k in seen
    return rows


def share_state_table(rows: list[dict]) -> pa.Table:
    schema = RAW_SHARE_PARTITION_STATES
    if not rows:
        return schema.empty_table()
    as_ms = schema
    for at, f in enumerate(schema):
        if pa.types.is_timestamp(f.type):
            as_ms = as_ms.set(at, pa.field(f.name, pa.int64()))
    return pa.Table.from_pylist(with_replayable(rows), schema=as_ms).cast(schema)


def decode_paths(paths: list[Path]) -> tuple[pa.Table, list[dict], dict[str, int]]:
    """The ``raw/share_partition_states`` table of every share state segment under ``paths``,
    its quarantine rows and stats (none found: an empty table)."""
    rows, bad = [], []
    stats = {"share_state_files": 0, "share_state_batches": 0, "share_state_records": 0}
    for n, f in share_state_segments(paths):
        r, b, s = decode_segment(f, n)
        rows += r
        bad += b
        for k, v in s.items():
            stats[k] += v
    return share_state_table(rows), bad, stats

