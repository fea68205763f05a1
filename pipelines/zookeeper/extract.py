"""The two ZooKeeper extract steps the CLI calls: ``kaudit extract zk`` (live, read-only) and
``kaudit extract zk-snapshot`` (offline). Both write client-visible ``raw/znodes`` rows (see
:mod:`pipelines.zookeeper.rows`) and ``raw/quarantine`` rows in one warehouse transaction,
then the run metadata."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.errors import InputError, UsageError
from pipelines.tables import RAW_QUARANTINE
from pipelines.zookeeper.errors import BadTree
from pipelines.zookeeper.rows import (
    PathOrder,
    client_order,
    normalize_chroot,
    sort_by_path,
    to_schema,
)

if TYPE_CHECKING:
    from pipelines.zookeeper.datadir import OfflineRead

LIVE_STEP = "extract_zk"
SNAPSHOT_STEP = "extract_zk_snapshot"
BATCH = 100_000
# Parquet dictionaries only where values repeat: paths, data and zxids are unique
# (dictionaries on every column: ~1.5x the encoding time and 2x the file size)
DICTIONARY_COLUMNS = ["source"]


def _publish(ctx: RunContext, step: str, batches: Iterable[pa.Table], quarantine: list[dict]) -> None:
    """Write the ``raw/znodes`` rows (``batches``, in order, made lazily) and the quarantine
    rows in one transaction. Write-behind: batch k+1 is made (sorted as far as it needs,
    gathered, cast) while a writer thread encodes batch k (Parquet encoding and compression
    release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    with ctx.warehouse.transaction(ctx.run_id, step=step) as tx:
        writer = tx.writer("raw/znodes", dictionary=DICTIONARY_COLUMNS)
        with ThreadPoolExecutor(1, thread_name_prefix="znodes-writer") as pool:
            pending = None
            for batch in batches:
                batch = to_schema(batch)
                if pending is not None:
                    pending.result()
                pending = pool.submit(writer.write, batch)
            if pending is not None:
                pending.result()
        tx.writer("raw/quarantine")
        if quarantine:
            tx.write("raw/quarantine", pa.Table.from_pylist(quarantine, schema=RAW_QUARANTINE))


def _slices(rows: pa.Table) -> Iterator[pa.Table]:
    for start in range(0, rows.num_rows, BATCH):
        yield rows.slice(start, BATCH)


def _taken(rows: PathOrder) -> Iterator[pa.Table]:
    for start in range(0, rows.num_rows, BATCH):
        yield rows.take(start, start + BATCH)


def _zxid_range(rows: pa.Table) -> dict:
    import pyarrow.compute as pc

    out = {}
    for col in ("mzxid", "pzxid"):
        mm = pc.min_max(rows[col]) if rows.num_rows else None
        out[f"{col}_min"] = mm["min"].as_py() if mm else None
        out[f"{col}_max"] = mm["max"].as_py() if mm else None
    return out


def extract_live(ctx: RunContext, *, hosts: str, chroot: str | None = None, auth: str | None = None,
                 tls: bool = False, ca=None, cert=None, key=None, window: int | None = None,
                 connect_timeout: float = 15.0) -> dict:
    """Walk a live ZooKeeper read-only into ``raw/znodes`` (source 'live')."""
    from pipelines.zookeeper import live

    client, root = live.connect(hosts, chroot, auth, tls, ca, cert, key, timeout=connect_timeout)
    shown = hosts.partition("/")[0]
    try:
        ctx.say(f"walking ZooKeeper {shown}{root or ''} (read-only)")
        with ctx.progress() as bar:
            task = bar.add_task("znodes", total=None)
            result = live.walk(client, root, window=window or live.WINDOW, progress=lambda n: bar.advance(task, n))
    finally:
        live._stop(client)
    # paths are already relative to the chroot; without one, /zookeeper was not walked
    rows = sort_by_path(result.rows)
    _publish(ctx, LIVE_STEP, _slices(rows), result.quarantine)
    meta = {
        "hosts": shown,
        "chroot": root or "/",
        "nodes": rows.num_rows,
        "quarantined": len(result.quarantine),
        "deleted_during_walk": result.skipped_deleted,
        "retries": result.retries,
        "reads": result.reads,
        "zxid_range": _zxid_range(rows),
        "excluded": [] if root else ["/zookeeper"],
    }
    ctx.warehouse.write_meta(ctx.run_id, LIVE_STEP, meta)
    ctx.say(f"{rows.num_rows} znodes, {len(result.quarantine)} quarantined "
            f"(mzxid {meta['zxid_range']['mzxid_min']}..{meta['zxid_range']['mzxid_max']})")
    return meta


def read_offline(path: Path, at_zxid: int | None = None, chroot: str | None = None, progress=None):
    """(rows, OfflineRead) of a data dir or one snapshot file."""
    rows, res = read_order(path, at_zxid, chroot, progress)
    return rows.take(), res


def read_order(path: Path, at_zxid: int | None = None, chroot: str | None = None,
               progress=None) -> tuple[PathOrder, OfflineRead]:
    """:func:`read_offline` with the rows not sorted nor gathered yet: a :class:`PathOrder`
    sorts and gathers them batch by batch."""
    from pipelines.zookeeper import datadir

    path = Path(path)
    single, d = datadir.resolve(path)
    if single is not None and at_zxid is not None:
        raise UsageError("--at-zxid needs a data dir (its logs are replayed up to that zxid), not one snapshot file")
    res = datadir.read_file(single) if single is not None else datadir.read_dir(d, at_zxid, progress)
    paths, data, stats = res.tree.persisted()
    root = normalize_chroot(chroot)
    rows, orphans = client_order(paths, data, stats, source="snapshot", chroot=root)
    if len(orphans):
        bad = paths[int(orphans[0])].as_py()
        raise BadTree(res.snapshot or str(path), 0, f"invalid tree: {bad} has no parent ({len(orphans)} such nodes)")
    if root and rows.num_rows == 0:
        raise InputError(f"{path}: chroot {root} is not in the tree")
    return rows, res


def extract_snapshot(ctx: RunContext, *, path: Path, at_zxid: int | None = None, chroot: str | None = None) -> dict:
    """Read a data dir (or its ``version-2/``, or one snapshot file) into ``raw/znodes``."""
    with ctx.progress() as bar:
        task = bar.add_task("txns replayed", total=None)
        rows, res = read_order(Path(path), at_zxid, chroot, progress=lambda n: bar.advance(task, n))
    for w in res.warnings:
        ctx.say(f"[yellow]warning[/]: {w}")
    _publish(ctx, SNAPSHOT_STEP, _taken(rows), res.quarantine)
    meta = {
        "path": str(path),
        "snapshot": res.snapshot,
        "snapshot_zxid": res.snapshot_zxid,
        "zxid": res.zxid,
        "target_zxid": at_zxid,
        "digest_verified": res.digest_verified,
        "logs_replayed": res.logs,
        "txns_applied": res.txns_applied,
        "txn_digests_checked": res.txn_digests_checked,
        "txn_digest_mismatches": res.txn_digest_mismatches,
        "nodes": rows.num_rows,
        "quarantined": len(res.quarantine),
        "chroot": normalize_chroot(chroot) or "/",
        "excluded": [] if normalize_chroot(chroot) else ["/zookeeper"],
        "warnings": res.warnings,
    }
    ctx.warehouse.write_meta(ctx.run_id, SNAPSHOT_STEP, meta)
    verified = {True: "digest verified", None: "no digest to verify"}[res.digest_verified]
    ctx.say(f"{rows.num_rows} znodes at zxid {res.zxid:#x} from {res.snapshot or 'an empty tree'} "
            f"+ {len(res.logs)} logs ({res.txns_applied} txns), {verified}, {len(res.quarantine)} quarantined")
    return meta
