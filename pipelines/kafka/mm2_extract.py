"""``kaudit extract mm2``: MirrorMaker 2's offset-sync and checkpoint topics, read from the log
dirs of the cluster that holds them, into ``raw/mm2_offset_syncs`` and ``raw/mm2_checkpoints``
(formats: :mod:`pipelines.kafka.mm2_records`); records that do not decode go to ``raw/quarantine``
with their file, byte and reason.

The topics hold one record per sync or checkpoint (a few per second of replication at most):
one Python decode per record, after the numba batch walk of each segment."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipelines import arrow
from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.kafka.errors import DecodeError
from pipelines.kafka.mm2_records import (
    CHECKPOINTS_TOPIC,
    OFFSET_SYNCS_TOPIC,
    UnknownCheckpointVersion,
    decode_checkpoint_key,
    decode_checkpoint_value,
    decode_offset_sync,
)
from pipelines.kafka.paths import PARTITION_DIR, base_offset_of, partition_dirs, segment_files
from pipelines.kafka.segment_records import segment_records
from pipelines.warehouse import quarantine as Q
from pipelines.warehouse.tables import RAW_MM2_CHECKPOINTS, RAW_MM2_OFFSET_SYNCS

STEP = "mm2"
SOURCE = "mm2"
SYNCS_TABLE = "raw/mm2_offset_syncs"
CHECKPOINTS_TABLE = "raw/mm2_checkpoints"


def mm2_partitions(paths: list[Path]) -> list[tuple[str, int, list[Path]]]:
    """(topic, partition, segments in log order) of every MirrorMaker offset-sync or checkpoint
    partition under ``paths`` (log dirs or partition dirs); of a partition several log dirs hold
    (replicas), the one whose log goes furthest."""
    replicas: dict[tuple[str, int], dict[Path, list[Path]]] = {}
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(f"{p}: no such file or directory")
        if not p.is_dir():
            continue
        m = PARTITION_DIR.match(p.name)
        found = [(m["topic"], int(m["partition"]), p)] if m else partition_dirs(p)
        for topic, n, d in found:
            if OFFSET_SYNCS_TOPIC.match(topic) or CHECKPOINTS_TOPIC.match(topic):
                replicas.setdefault((topic, n), {}).setdefault(d.resolve(), segment_files(d))

    def extent(item: tuple[Path, list[Path]]) -> tuple:
        d, files = item
        return ((base_offset_of(files[-1]), files[-1].stat().st_size) if files else (-1, -1), str(d))

    return [(t, n, max(replicas[(t, n)].items(), key=extent)[1]) for t, n in sorted(replicas)]


def decode_segment(path: Path, topic: str, partition: int) -> tuple[list[dict], list[dict], int]:
    """(rows, quarantine rows, batches read) of one segment of an offset-sync or checkpoint topic."""
    syncs = OFFSET_SYNCS_TOPIC.match(topic)
    seg = segment_records(path)
    bad = [Q.row(SOURCE, Q.at(path, pos), err, raw) for pos, err, raw in seg.bad]
    rows: list[dict] = []
    for r in seg.records:
        key, value = r.key, r.value
        place = dict(log_offset=r.offset, batch_timestamp=r.batch_timestamp, segment_file=str(path))
        where = Q.at(path, r.position)
        try:
            if syncs:
                rows.append({"target_alias": syncs["alias"], **decode_offset_sync(key, value),
                             "syncs_topic": topic, "syncs_partition": partition, **place})
                continue
            k = decode_checkpoint_key(key)
            try:
                v = decode_checkpoint_value(value)
            except UnknownCheckpointVersion as err:
                bad.append(Q.row(SOURCE, where, err, value))
                v = {"value_version": err.version, "value": value}  # kept raw
        except DecodeError as err:
            bad.append(Q.row(SOURCE, where, err, value if key is not None else key))
            continue
        rows.append({"source_alias": CHECKPOINTS_TOPIC.match(topic)["alias"], **k, **v,
                     "checkpoints_topic": topic, "checkpoints_partition": partition, **place})
    return rows, bad, seg.good_batches


def _table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """``rows`` (batch timestamps in epoch ms) as a table of ``schema``."""
    at = schema.get_field_index("batch_timestamp")
    as_ms = schema.set(at, schema.field(at).with_type(pa.int64()))
    return arrow.pylist_table(rows, as_ms).cast(schema)


def extract_mm2(ctx: RunContext, paths: list[Path]) -> dict:
    """Every offset-sync and checkpoint record under ``paths`` into the run's raw tables."""
    parts = mm2_partitions(paths)
    if not parts:
        raise InputError(f"{paths[0] if len(paths) == 1 else f'{len(paths)} paths'}: no MirrorMaker 2 topic "
                         "(mm2-offset-syncs.<alias>.internal-N or <alias>.checkpoints.internal-N partition dirs)")
    syncs, checkpoints, bad = [], [], []
    files = size = batches = 0
    for topic, n, segments in parts:
        for f in segments:
            rows, b, good = decode_segment(f, topic, n)
            (syncs if OFFSET_SYNCS_TOPIC.match(topic) else checkpoints).extend(rows)
            bad += b
            files, size, batches = files + 1, size + f.stat().st_size, batches + good
    if size and not batches:
        raise InputError(f"{parts[0][2][0].parent}: no readable record batch in {files} segment files of the "
                         f"MirrorMaker 2 topics ({size} bytes; expected Kafka log segments)")
    with ctx.warehouse.transaction(ctx.run_id, step=STEP) as tx:
        tx.write(SYNCS_TABLE, _table(syncs, RAW_MM2_OFFSET_SYNCS))
        tx.writer(SYNCS_TABLE)
        tx.write(CHECKPOINTS_TABLE, _table(checkpoints, RAW_MM2_CHECKPOINTS))
        tx.writer(CHECKPOINTS_TABLE)
        tx.write("raw/quarantine", Q.table(bad))
        tx.writer("raw/quarantine")
    ctx.say(f"mm2: {len(syncs)} offset syncs, {len(checkpoints)} checkpoints from {files} segment files "
            f"of {len(parts)} partitions")
    if bad:
        ctx.say(f"mm2: {len(bad)} records or batches quarantined")
    return {"offset_syncs": len(syncs), "checkpoints": len(checkpoints), "files": files, "quarantine": len(bad)}


def in_run(ctx: RunContext) -> bool:
    """The run holds MirrorMaker records in one of its clusters."""
    from pipelines.clusters import aliases

    return any(aliases(ctx.warehouse, ctx.run_id, t) for t in (SYNCS_TABLE, CHECKPOINTS_TABLE))
