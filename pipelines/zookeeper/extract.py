"""The two ZooKeeper extract steps the CLI calls: ``kaudit extract zk`` (live, read-only) and
``kaudit extract zk-snapshot`` (offline). Both write client-visible ``raw/znodes`` rows (see
:mod:`pipelines.zookeeper.rows`) and ``raw/quarantine`` rows in one warehouse transaction,
then the run metadata."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pipelines.context import RunContext
from pipelines.errors import InputError, UsageError
from pipelines.warehouse import quarantine
from pipelines.warehouse.tables import RAW_ZNODE_CHANGES, RAW_ZNODES
from pipelines.zookeeper.rows import (
    PathOrder,
    Spans,
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
# Parquet statistics of every column but the paths and the data: min/max of long unique
# strings cost ~10% of the encoding and nothing filters on them (the core build reads the
# sources from the statistics: pipelines.spark.io.row_group_bounds). And 64K values per
# encoder step, not pyarrow's 1024. Together: 1M znodes encoded in 0.17 s of CPU, not 0.21 s
STATISTICS_COLUMNS = [name for name in RAW_ZNODES.names if name not in ("path", "data")]
ENCODER_BATCH = 1 << 16


def _publish(ctx: RunContext, step: str, batches: Iterable[pa.Table], quarantined: list[dict],
             changes: pa.Table | None = None, locate=None) -> int:
    """Write the ``raw/znodes`` rows (``batches``, in order, made lazily), the quarantine
    rows and (offline reads) the ``raw/znode_changes`` rows in one transaction; returns the
    number of rows written (a path that is not UTF-8 is quarantined instead). Write-behind:
    batch k+1 is made (sorted as far as it needs, gathered) while a writer thread checks
    the paths of batch k and encodes it (UTF-8 validation, Parquet encoding and compression
    release the GIL). ``locate(path bytes)``: the file:byte a node that is not UTF-8 comes from."""
    from concurrent.futures import ThreadPoolExecutor

    source = "zk-live" if step == LIVE_STEP else "zk-snapshot"
    written = 0
    with ctx.warehouse.transaction(ctx.run_id, step=step) as tx:
        writer = tx.writer("raw/znodes", dictionary=DICTIONARY_COLUMNS, statistics=STATISTICS_COLUMNS,
                           batch_size=ENCODER_BATCH)

        def write(batch: pa.Table) -> int:
            batch = to_schema(_utf8_paths(batch, quarantined, source, locate))
            writer.write(batch)
            return batch.num_rows

        with ThreadPoolExecutor(1, thread_name_prefix="znodes-writer") as pool:
            pending = None
            for batch in batches:
                if pending is not None:
                    written += pending.result()
                pending = pool.submit(write, batch)
            if pending is not None:
                written += pending.result()
        if changes is not None:
            tx.writer("raw/znode_changes", dictionary=["op", "kind"]).write(changes)
        tx.writer("raw/quarantine")
        if quarantined:
            rows = [{k: text(v) if isinstance(v, str) else v for k, v in q.items()} for q in quarantined]
            tx.write("raw/quarantine", quarantine.table(rows))
    return written


def text(s: str) -> str:
    """``s`` as valid UTF-8 text: bytes a file name or a damaged path held that are not UTF-8
    (surrogate escapes) are written as ``\\xNN``."""
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _utf8_paths(batch: pa.Table, quarantined: list[dict], source: str, locate=None) -> pa.Table:
    """The rows of ``batch`` whose path is valid UTF-8; the others are quarantined (a node's
    subtree goes with it: every path below holds the same invalid bytes), at the file:byte
    ``locate`` gives (else at the path)."""
    paths = batch["path"]
    try:
        paths.validate(full=True)
        return batch
    except pa.ArrowInvalid:
        pass
    keep = []
    for raw in paths.cast(pa.large_binary()).to_pylist():
        try:
            raw.decode("utf-8")
            keep.append(True)
        except UnicodeDecodeError as err:
            keep.append(False)
            path = text(raw.decode("utf-8", "surrogateescape"))
            where = locate(raw) if locate is not None else None
            quarantined.append(quarantine.row(
                source, text(where) if where else path,
                f"znode path {path} is not valid UTF-8 (byte {err.start} of the path: {err.reason}); "
                "the node is left out of raw/znodes", raw))
    return batch.filter(pa.array(keep))


def _slices(rows: pa.Table) -> Iterator[pa.Table]:
    for start in range(0, rows.num_rows, BATCH):
        yield rows.slice(start, BATCH)


def _taken(rows: PathOrder) -> Iterator[pa.Table]:
    rows.sort.ahead(BATCH)  # (if not started yet)
    for start in range(0, rows.num_rows, BATCH):
        yield rows.take(start, start + BATCH, wide=False)


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
                 connect_timeout: float | None = None, timeout: float | None = None) -> dict:
    """Walk a live ZooKeeper read-only into ``raw/znodes`` (source 'live'). ``timeout``: how
    long a server that accepts connections but does not answer is waited for (to connect, and
    then for any answer); servers that refuse connections fail the walk within seconds."""
    from pipelines.zookeeper import live

    connect_timeout = connect_timeout or timeout or live.CONNECT
    client, root = live.connect(hosts, chroot, auth, tls, ca, cert, key, timeout=connect_timeout)
    shown = hosts.partition("/")[0]
    try:
        ctx.say(f"walking ZooKeeper {shown}{root or ''} (read-only)")
        with ctx.progress() as bar:
            task = bar.add_task("znodes", total=None)
            result = live.walk(client, root, window=window or live.WINDOW, stall_timeout=timeout or live.STALL,
                               progress=lambda n: bar.advance(task, n))
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
    from pipelines.zookeeper import chain, datadir

    path = Path(path)
    single, d = datadir.resolve(path)
    if single is not None and at_zxid is not None:
        raise UsageError("--at-zxid needs a data dir (its logs are replayed up to that zxid), not one snapshot file")
    res = datadir.read_file(single) if single is not None else chain.read_dir_with_history(d, at_zxid, progress)
    paths, data, stats = res.tree.persisted()
    root = normalize_chroot(chroot)
    rows, orphans = client_order(paths, data, stats, source="snapshot", chroot=root)
    if len(orphans):
        where = res.snapshot or str(path)
        for name in Spans.of(paths).take(np.asarray(orphans, dtype=np.int64), pa.large_binary()).to_pylist():
            res.quarantined(text(name.decode("utf-8", "surrogateescape")),
                            f"{where}: invalid tree: this znode's parent is not in it (damage); "
                            "left out with its subtree")
        res.warnings.append(f"invalid tree: {len(orphans)} znodes without a parent in {where}; "
                            f"{rows.left_out} znodes left out")
    if root and rows.num_rows == 0:
        raise InputError(f"{path}: chroot {root} is not in the tree")
    return rows, res


def _utc(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _locator(tree, chroot: str | None):
    """path bytes as written (relative to the chroot, root ``/``) -> file:byte of the node."""
    prefix = (normalize_chroot(chroot) or "").encode("utf-8", "surrogateescape")

    def locate(raw: bytes) -> str | None:
        full = prefix + raw if raw != b"/" else (prefix or b"")
        return tree.origin(full)

    return locate


def _say_warnings(ctx: RunContext, warnings: list[str]) -> None:
    if warnings and not ctx.quiet:
        from rich.markup import escape

        for w in warnings:
            ctx.say(f"[yellow]warning[/]: {escape(text(w))}")


def extract_snapshot(ctx: RunContext, *, path: Path, at_zxid: int | None = None, chroot: str | None = None) -> dict:
    """Read a data dir (or its ``version-2/``, or one snapshot file) into ``raw/znodes``."""
    with ctx.progress() as bar:
        task = bar.add_task("txns replayed", total=None)
        rows, res = read_order(Path(path), at_zxid, chroot, progress=lambda n: bar.advance(task, n))
    rows.sort.ahead(BATCH)  # the path sort runs while the transaction is set up
    _say_warnings(ctx, res.warnings)
    history = res.history
    changes = (history.changes.table(res.zxid, normalize_chroot(chroot)) if history is not None
               else pa.Table.from_batches([], RAW_ZNODE_CHANGES))  # not empty_table(): it imports pandas (~0.3 s)
    if history is not None:
        for where, path, op in history.changes.left_out:
            res.quarantined(text(where), f"znode path {text(path)} is not valid UTF-8; its {op} is left out of "
                            "raw/znode_changes", path.encode("utf-8", "surrogateescape"))
    nodes = _publish(ctx, SNAPSHOT_STEP, _taken(rows), res.quarantine, changes, _locator(res.tree, chroot))
    meta = {
        "path": text(str(path)),
        "snapshot": text(res.snapshot) if res.snapshot else None,
        "snapshot_zxid": res.snapshot_zxid,
        "zxid": res.zxid,
        "target_zxid": at_zxid,
        "digest_verified": res.digest_verified,
        "verified_zxid": res.verified_zxid,
        "unverified": text(res.unverified) if res.unverified else None,
        "logs_replayed": [text(log) for log in res.logs],
        "txns_applied": res.txns_applied,
        "txn_digests_checked": res.txn_digests_checked,
        "txn_digest_mismatches": res.txn_digest_mismatches,
        "nodes": nodes,
        "znode_changes": changes.num_rows,
        "history": history.meta() if history is not None else None,
        "quarantined": len(res.quarantine),
        "chroot": normalize_chroot(chroot) or "/",
        "excluded": [] if normalize_chroot(chroot) else ["/zookeeper"],
        "warnings": [text(w) for w in res.warnings],
    }
    ctx.warehouse.write_meta(ctx.run_id, SNAPSHOT_STEP, meta)
    if ctx.quiet:  # (rich's markup is not imported)
        return meta
    from rich.markup import escape

    if history is not None:
        span = (f"from {_utc(history.first_time)} to {_utc(history.last_time)}" if history.first_time is not None
                else "with no txn")
        start = escape(text(Path(history.snapshot).name)) if history.snapshot else "the empty tree"
        ctx.say(f"history {span}: {history.txns} txns, {history.snapshots} snapshot(s) (from {start}, zxid "
                f"{history.start_zxid:#x} to {history.end_zxid:#x}), {changes.num_rows} raw/znode_changes rows")
    verified = {True: "digest verified", None: "no digest to verify",
                False: f"[bold red]NOT verified[/]: {escape(text(res.unverified or ''))}"}[res.digest_verified]
    ctx.say(f"{nodes} znodes at zxid {res.zxid:#x} from {escape(text(res.snapshot or 'an empty tree'))} "
            f"+ {len(res.logs)} logs ({res.txns_applied} txns), {verified}, {len(res.quarantine)} quarantined")
    return meta
