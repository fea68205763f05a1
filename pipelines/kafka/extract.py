"""``kaudit extract offsets`` and ``kaudit extract log-end``: the step functions the CLI calls."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.kafka import native
from pipelines.kafka.batch_times import CHECKPOINT_FILE, batch_table, checkpoint_table, read_checkpoint
from pipelines.kafka.groups import TABLE_NAMES as GROUP_TABLES
from pipelines.kafka.log_end import SOURCE as LOG_END_SOURCE
from pipelines.kafka.log_end import read_offsets_file, read_topic_configs, scan_partition
from pipelines.kafka.offsets import TABLES, decode_file_to_parts
from pipelines.kafka.paths import data_partition_dirs, offsets_segments
from pipelines.kafka.remote_log import TABLE as REMOTE_LOG_TABLE
from pipelines.kafka.remote_log import decode_paths as decode_remote_log
from pipelines.kafka.share_state import TABLE as SHARE_STATE_TABLE
from pipelines.kafka.share_state import decode_paths as decode_share_state
from pipelines.procs import die_with
from pipelines.warehouse import quarantine
from pipelines.warehouse.tables import RAW_LOG_END_OFFSETS, RAW_TOPIC_CONFIGS, TS

STEP_OFFSETS = "offsets"
STEP_LOG_END = "log-end"


def _pool(workers: int | None, jobs: int):
    n = min(workers or os.cpu_count() or 1, jobs)
    if n <= 1:
        return None
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context(method),
                               initializer=_worker_start, initargs=(os.getpid(),))


# glibc mallopt parameters
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3


def _worker_start(parent: int) -> None:
    """A decode worker: dies with ``parent``; glibc's malloc keeps the memory a segment freed
    for the next one. Each segment allocates its column arrays afresh (~10 arrays of 4-40 MB
    for 500,000 commits); by default every one above 128 KiB is a new mmap, zeroed page by
    page by the kernel, and returned at free. With arrays up to 32 MiB (glibc's limit) on the
    heap, not trimmed, ``kaudit extract offsets`` of the 5M-record benchmark's data
    (``benchmarks/bench_offsets.py``) spends about a third less system CPU. Workers end with
    the step."""
    die_with(parent)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None)
            libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
            libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
            libc.mallopt(M_TOP_PAD, 64 << 20)
        except (OSError, AttributeError):  # not glibc: its defaults
            pass


def _named(paths: list[Path]) -> str:
    """The input an error names: the path, or how many there were."""
    return str(paths[0]) if len(paths) == 1 else f"{len(paths)} paths"


def _decode_job(job):
    return decode_file_to_parts(*job)


def extract_offsets(ctx: RunContext, paths: list[Path], workers: int | None) -> dict:
    """Decode ``__consumer_offsets`` segments into the raw offsets/group tables of the run.

    Files are decoded in parallel processes; each writes its own data files of the step's
    partitions of the tables (:meth:`~pipelines.warehouse.writer.TableWriter.target`). A file
    with transactional commits is decoded again once the markers of its whole partition are
    known (from the first pass over every file), to resolve their states. All tables are
    committed and published together when every file is done."""
    segments = offsets_segments(paths)
    scopes = sorted({s.scope for s in segments})
    ctx.say(f"offsets: {len(segments)} segment files in {len(scopes)} partitions")
    counts = {t: 0 for t in TABLES}
    stats: dict[str, int] = {"files": 0, "bytes": 0, "batches": 0, "records": 0, "control_records": 0}
    pool = _pool(workers, len(segments))
    if pool and not native.KERNELS.is_aot():
        from pipelines.kafka.segment import warm_up

        warm_up()  # load the JIT's kernels once; forked workers inherit them
    run = pool.map if pool else map
    try:
        with ctx.warehouse.transaction(ctx.run_id, step=STEP_OFFSETS) as tx, ctx.progress() as bar:
            staging = {t: tx.writer(t).target() for t in TABLES
                       if t != "raw/quarantine"}  # a shared table: its rows go through the step's writer
            task = bar.add_task("decoding segments", total=len(segments))
            markers: dict[str, list] = {scope: [] for scope in scopes}

            def decode(jobs) -> list[int]:
                """Run ``jobs``; the indexes of the segments left for the second pass."""
                later = []
                for (i, seg, *_), out in zip(jobs, run(_decode_job, [job[1:] for job in jobs]), strict=True):
                    if len(out) == 3:  # transactional commits: only its markers
                        later.append(i)
                        markers[seg.scope].append(out)
                        continue
                    rows, s, quarantine, own, written = out
                    if jobs is first:
                        markers[seg.scope].append(own)
                    tx.write("raw/quarantine", quarantine)
                    for t, n in rows.items():
                        counts[t] += n
                    for t, path in written.items():
                        tx.writer(t).add_files([path], rows[t])
                    for k, v in s.items():
                        stats[k] = stats.get(k, 0) + v
                    bar.advance(task)
                return later

            first = [(i, seg, None, staging, f"part-{STEP_OFFSETS}-{i:05d}") for i, seg in enumerate(segments)]
            later = decode(first)
            if later:
                by_scope = {scope: tuple(np.concatenate(parts) for parts in zip(*found, strict=True))
                            for scope, found in markers.items() if found}
                decode([(i, segments[i], by_scope[segments[i].scope], staging, f"part-{STEP_OFFSETS}-{i:05d}")
                        for i in later])
            # the share coordinator's __share_group_state partitions of the same log dirs
            share, share_bad, share_stats = decode_share_state(paths)
            tx.write(SHARE_STATE_TABLE, share)
            tx.write("raw/quarantine", quarantine.table(share_bad))
            tx.writer(SHARE_STATE_TABLE)
            stats.update(share_stats)
            for t in TABLES:
                if not counts[t] or t == "raw/quarantine":
                    tx.writer(t)  # every table gets its partition, empty or not
            if stats["bytes"] and not stats["batches"]:  # nothing readable: no tables, exit 1
                raise InputError(f"{_named(paths)}: no readable record batch in {stats['files']} segment files "
                                 f"({stats['bytes']} bytes; expected Kafka log segments)")
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    short = {t.split("/")[1]: n for t, n in counts.items()}
    ctx.say(
        f"offsets: {stats['batches']} batches, {stats['records']} records "
        f"({stats['control_records']} transaction markers) from {stats['bytes'] / 1e6:.1f} MB"
    )
    ctx.say(
        "offsets: "
        + ", ".join(f"{short[k]} {k}" for k in ("offset_commits", "group_metadata", "group_members",
                                                  "group_assignments", "coordinator_records"))
        + f", {sum(counts[t] for t in GROUP_TABLES)} KIP-848/share/streams group rows"
    )
    if stats["share_state_files"]:
        ctx.say(f"offsets: {stats['share_state_records']} share-partition state records (__share_group_state) "
                f"from {stats['share_state_files']} segment files")
    return {**short, "share_partition_states": stats["share_state_records"], **stats}


def extract_log_end(ctx: RunContext, paths: list[Path], offsets_file: Path | None,
                    topic_configs: Path | None = None) -> dict:
    """Log start/end offsets per data-topic partition into ``raw/log_end_offsets`` (``paths`` or
    ``offsets_file``: the command line asks for one of them or ``topic_configs``), the batch
    headers' timestamps into ``raw/batch_timestamps``, the log dirs' log-start checkpoints into
    ``raw/log_start_checkpoints``, the tiered-storage events of ``__remote_log_metadata`` into
    ``raw/remote_log_metadata`` and the ``topic_configs`` file's lines into ``raw/topic_configs``."""
    configs = read_topic_configs(topic_configs) if topic_configs is not None else []
    rows: dict[tuple[str, int], dict] = {}
    headers: dict[tuple[str, int], pa.Table | None] = {}
    quarantined: list[dict] = []
    dirs = data_partition_dirs(paths)
    size = batches = 0
    with ctx.progress() as bar:
        task = bar.add_task("reading batch headers", total=len(dirs))
        for topic, partition, d in dirs:
            ends = scan_partition(topic, partition, d)
            bar.advance(task)
            if ends is None:
                continue
            size, batches = size + ends.bytes, batches + ends.batches
            quarantined.extend(ends.quarantine)
            row = dict(
                topic=topic,
                partition=partition,
                log_start_offset=ends.log_start_offset,
                log_end_offset=ends.log_end_offset,
                max_timestamp=ends.max_timestamp,
            )
            old = rows.get((topic, partition))
            # the same partition under several log dirs (replicas of several brokers): the
            # replica that got furthest wins
            if old is None or (row["log_end_offset"] or -1) > (old["log_end_offset"] or -1):
                rows[(topic, partition)] = row
                parts = [batch_table(topic, partition, h) for h in ends.headers]
                headers[(topic, partition)] = pa.concat_tables(parts) if parts else None
    if size and not batches:
        raise InputError(f"{_named(paths)}: no readable record batch in the segments of {len(dirs)} partition dirs "
                         f"({size} bytes; expected Kafka log segments)")
    checkpoints, seen = [], set()
    for _, _, d in dirs:
        f = d.parent / CHECKPOINT_FILE
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        found, bad = read_checkpoint(f)
        quarantined.extend(quarantine.row(LOG_END_SOURCE, loc, why) for loc, why in bad)
        checkpoints.extend((t, p, o, str(f)) for t, p, o in found)
    remote, remote_bad, remote_files = decode_remote_log(paths)
    quarantined.extend(remote_bad)
    from_file = 0
    if offsets_file is not None:
        for topic, partition, offset in read_offsets_file(offsets_file):
            from_file += 1
            row = rows.setdefault(
                (topic, partition),
                dict(topic=topic, partition=partition, log_start_offset=None, log_end_offset=None, max_timestamp=None),
            )
            row["log_end_offset"] = offset  # the broker's own answer wins over the segments
    ordered = [rows[k] for k in sorted(rows)]
    table = pa.Table.from_pylist(ordered, schema=RAW_LOG_END_OFFSETS.set(4, pa.field("max_timestamp", pa.int64())))
    table = table.set_column(4, "max_timestamp", table["max_timestamp"].cast(TS))
    with ctx.warehouse.transaction(ctx.run_id, step=STEP_LOG_END) as tx:
        tx.write("raw/log_end_offsets", table)
        tx.writer("raw/log_end_offsets")
        for key in sorted(headers):
            if headers[key] is not None:
                tx.write("raw/batch_timestamps", headers[key])
        tx.writer("raw/batch_timestamps")
        tx.write("raw/log_start_checkpoints", checkpoint_table(sorted(checkpoints)))
        tx.writer("raw/log_start_checkpoints")
        tx.write(REMOTE_LOG_TABLE, remote)
        tx.writer(REMOTE_LOG_TABLE)
        tx.write("raw/topic_configs", pa.Table.from_pylist(
            [dict(zip(RAW_TOPIC_CONFIGS.names, c, strict=True)) for c in configs], RAW_TOPIC_CONFIGS))
        tx.writer("raw/topic_configs")
        tx.write("raw/quarantine", quarantine.table(quarantined))
        tx.writer("raw/quarantine")
    if configs:
        ctx.say(f"log-end: {len(configs)} topic configs from {topic_configs}")
    ctx.say(f"log-end: {len(ordered)} partitions ({len(dirs)} partition dirs, {from_file} lines from --offsets-file)")
    if remote_files:
        ctx.say(f"log-end: {remote.num_rows} remote log metadata events "
                f"(__remote_log_metadata, {remote_files} segments)")
    if quarantined:
        ctx.say(f"log-end: {len(quarantined)} corrupt batch headers / checkpoint lines quarantined")
    return {"partitions": len(ordered), "dirs": len(dirs), "offsets_file_lines": from_file,
            "remote_log_events": remote.num_rows,
            "topic_configs": len(configs), "quarantine": len(quarantined)}
