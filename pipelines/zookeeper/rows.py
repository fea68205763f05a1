"""The client-visible form of znodes: the ``raw/znodes`` rows both readers produce.

What a client (kazoo) gets from ``get`` differs from what the server persists
(``DataNode.copyStat``): ``cversion = 2 * persisted cversion - numChildren`` (the persisted
one counts creates only), ``ephemeralOwner`` is 0 for containers and TTL nodes
(``EphemeralType``: container = Long.MIN_VALUE, TTL = high byte 0xFF; this assumes the
server ran with extended types enabled, as TTL nodes need), ``dataLength`` is 0 for null data
and ``numChildren`` is derived from the tree. Null data stays null (kazoo returns ``None``).

Paths are the paths a client sees: the root is ``/`` and, under a chroot, every path is
relative to it (the chroot node itself is ``/``).

The ``/zookeeper`` subtree is left out of both readers: the server rewrites the quota
``zookeeper_stats`` nodes in memory without a transaction and sets ``/zookeeper/config``
from its dynamic configuration at start, so an offline read cannot reproduce what a live
client sees there (ZooKeeper's own tree digest skips ``/zookeeper/`` for the same reason).
The root still counts ``zookeeper`` among its children, in both readers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipelines.warehouse.tables import RAW_ZNODES

SYSTEM_ROOT = "/zookeeper"


def normalize_chroot(chroot: str | None) -> str:
    """'' for no chroot, else '/a/b' (no trailing slash)."""
    if not chroot or chroot.strip("/") == "":
        return ""
    return "/" + chroot.strip("/")


@dataclass(frozen=True)
class Spans:
    """Strings (or binary values) as byte ranges of one buffer: value i is
    ``values[starts[i] : starts[i] + lengths[i]]``, null when ``lengths[i]`` is -1.

    An Arrow string/binary array reads as one without a copy (:meth:`of`); a snapshot's
    paths and data are ranges of the snapshot bytes, so they are copied once, in path order,
    into the batches written (:meth:`take`)."""

    values: np.ndarray  # uint8
    starts: np.ndarray  # int64
    lengths: np.ndarray  # int64

    @classmethod
    def of(cls, arr) -> Spans:
        if isinstance(arr, Spans):
            return arr
        arr = _array(arr)
        if pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
            arr = arr.cast(pa.large_string() if pa.types.is_string(arr.type) else pa.large_binary())
        offsets, values, valid = _buffers(arr)
        lengths = np.diff(offsets)
        if valid is not None:
            lengths[~valid] = -1
        return cls(values, offsets[:-1], lengths)

    def __len__(self) -> int:
        return len(self.starts)

    def take(self, order: np.ndarray | None, typ: pa.DataType) -> pa.Array:
        """Values ``order`` (default all, in order) as an Arrow array of type ``typ``:
        ``large_string``/``large_binary``, or ``string``/``binary`` (32-bit offsets; more than
        2 GiB of values raise :class:`pyarrow.ArrowInvalid`, as a cast would)."""
        from pipelines.zookeeper.native import kernels as native

        if order is None:
            order = np.arange(len(self), dtype=np.int64)
        n = len(order)
        out_offsets, out, nulls = native().take_spans(self.values, self.starts, self.lengths, order)
        bitmap = pa.py_buffer(np.packbits(self.lengths[order] >= 0, bitorder="little")) if nulls else None
        if not (pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)):
            if out_offsets[-1] > np.iinfo(np.int32).max:
                raise pa.ArrowInvalid(f"{out_offsets[-1]} bytes of values do not fit the 32-bit offsets of {typ}")
            out_offsets = out_offsets.astype(np.int32)
        return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(out_offsets), pa.py_buffer(out)], null_count=nulls)

    def rebased(self, rows: np.ndarray, skip: int) -> Spans:
        """The values of ``rows`` without their first ``skip`` bytes (others unchanged)."""
        starts, lengths = self.starts.copy(), self.lengths.copy()
        starts[rows] += skip
        lengths[rows] -= skip
        return Spans(self.values, starts, lengths)


# The fields of a StatPersisted record (see pipelines.zookeeper.kernels.decode_stats)
STAT_LONGS = ("czxid", "mzxid", "ctime", "mtime", "ephemeral_owner", "pzxid")
STAT_INTS = ("version", "cversion", "aversion")
PERSISTED_STAT = STAT_LONGS + STAT_INTS


@dataclass(frozen=True)
class StatRecords:
    """Persisted stats as StatPersisted records of a buffer (a snapshot's bytes) at
    ``offsets``, decoded into native columns only when taken."""

    values: np.ndarray  # uint8
    offsets: np.ndarray  # int64

    def take(self, order: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The stat columns (:data:`PERSISTED_STAT`) of records ``order`` (default all)."""
        longs, ints = self.rows(np.arange(len(self.offsets), dtype=np.int64) if order is None else order)
        return dict(zip(STAT_LONGS, longs, strict=True)) | dict(zip(STAT_INTS, ints, strict=True))

    def rows(self, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(:data:`STAT_LONGS` rows, :data:`STAT_INTS` rows) of records ``order``."""
        from pipelines.zookeeper.native import kernels as native

        return native().decode_stats(self.values, self.offsets, order)


def _stat_rows(stats, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`StatRecords.rows` of persisted stats as records or as numpy columns."""
    if isinstance(stats, StatRecords):
        return stats.rows(order)
    return (np.stack([stats[name][order] for name in STAT_LONGS]).astype(np.int64, copy=False),
            np.stack([stats[name][order] for name in STAT_INTS]).astype(np.int32, copy=False))


def parent_index(paths) -> tuple[np.ndarray, np.ndarray]:
    """For snapshot-form paths (root "", an Arrow array or :class:`Spans`): each node's
    parent row (-1 for the root or a missing parent) and whether the node is the root."""
    from pipelines.zookeeper.native import kernels as native

    kernels = native()
    paths = Spans.of(paths)
    values, starts, lengths = paths.values, paths.starts, paths.lengths
    is_root = lengths == 0
    plen = np.empty(len(starts), np.int64)  # -1: no '/', the root or no path at all
    kernels.parent_lengths(values, starts, lengths, plen)
    idx = np.empty(len(starts), np.int64)
    if kernels.preorder_parents(values, starts, lengths, plen, idx):  # a snapshot as written: no hashing needed
        return idx, is_root
    import pyarrow.compute as pc  # ~0.08 s to import: only for trees not in pre-order

    parents = Spans(values, starts, plen).take(None, pa.large_string())
    idx = pc.index_in(parents, value_set=paths.take(None, pa.large_string())).to_numpy(zero_copy_only=False)
    idx = np.where(np.isnan(idx), -1, idx).astype(np.int64) if idx.dtype.kind == "f" else idx.astype(np.int64)
    return idx, is_root  # no parent path (null): -1


class PathSort:
    """Row numbers (``rows``, default all) ordered by path bytes, sorted only as far as asked
    (:func:`~pipelines.zookeeper.kernels.sort_strings_until`): the first rows can be
    written while the rest is still being sorted, here (:meth:`head`) or on a thread of its
    own (:meth:`ahead`). An int64 ``rows`` is sorted in place (1M rows: 8 MB not copied)."""

    def __init__(self, paths, rows: np.ndarray | None = None):
        from pipelines.zookeeper.native import kernels as native

        self._kernels = native()
        self._paths = Spans.of(paths)
        n = len(self._paths) if rows is None else len(rows)
        self.order = np.arange(n, dtype=np.int64) if rows is None else rows.astype(np.int64, copy=False)
        self._scratch = (np.empty(n, np.uint64), np.empty(n, np.int64), np.empty(n, np.uint64))
        self._stack = self._kernels.sort_stack(n)
        self._top = 1 if n > 1 else 0
        self._final = 0 if self._top else n  # order[:_final] is sorted for good
        self._ahead: threading.Thread | None = None
        self._sorted = threading.Condition()
        self._failed: BaseException | None = None

    def __len__(self) -> int:
        return len(self.order)

    def head(self, stop: int) -> np.ndarray:
        """``order[:stop]``, sorted (and final) from here on."""
        stop = min(stop, len(self.order))
        if self._ahead is None:
            if self._final < stop:
                self._sort_until(stop)
        else:
            with self._sorted:
                self._sorted.wait_for(lambda: self._final >= stop or self._failed is not None)
            if self._failed is not None:
                raise self._failed
        return self.order[:stop]

    def ahead(self, step: int) -> None:
        """Sort the rest on another thread, ``step`` rows at a time, while the caller takes
        the rows already sorted (:meth:`head` waits for the rows it asks for). The kernel
        releases the GIL: 1M paths sort in ~0.2 s of a second core."""
        if self._top and self._ahead is None:
            self._ahead = threading.Thread(target=self._sort_ahead, args=(step,), name="path-sort", daemon=True)
            self._ahead.start()

    def _sort_ahead(self, step: int) -> None:
        try:
            stop = self._final
            while self._top:
                stop += step
                self._sort_until(stop)
        except BaseException as err:  # noqa: BLE001 - raised by head() in the caller's thread
            with self._sorted:
                self._failed = err
                self._sorted.notify_all()

    def _sort_until(self, stop: int) -> None:
        p = self._paths
        top = self._kernels.sort_strings_until(p.values, p.starts, p.lengths, self.order, *self._scratch,
                                               self._stack, self._top, stop)
        with self._sorted:
            self._top = top
            self._final = int(self._stack[top - 1, 0]) if top else len(self.order)
            self._sorted.notify_all()


@dataclass
class PathOrder:
    """``raw/znodes`` rows in path order, not gathered yet: ``paths``, ``data`` and the
    persisted ``stats`` (numpy columns or :class:`StatRecords`) of the nodes, taken in the
    order of ``sort``. A writer gathers (and sorts) one batch while the previous one is
    being written."""

    paths: Spans
    data: Spans
    stats: dict[str, np.ndarray] | StatRecords
    num_children: np.ndarray
    sort: PathSort
    source: str
    left_out: int = 0  # orphans and the nodes below them: not in the rows (see client_order)

    @property
    def num_rows(self) -> int:
        return len(self.sort)

    def take(self, start: int = 0, stop: int | None = None, *, wide: bool = True) -> pa.Table:
        """Rows ``start:stop`` of the sorted ``raw/znodes`` rows: the client's view of them.
        ``wide``: paths and data as ``large_string``/``large_binary``, else as the table's own
        ``string``/``binary`` (what the writer takes without a cast)."""
        stop = self.num_rows if stop is None else min(stop, self.num_rows)
        order = self.sort.head(stop)[start:]
        from pipelines.zookeeper.native import kernels as native

        longs, ints = _stat_rows(self.stats, order)  # STAT_LONGS, STAT_INTS
        cversion, data_length, children = native().client_stats(longs, ints, self.num_children, self.data.lengths,
                                                                order)
        ts = pa.timestamp("ms", tz="UTC")
        return pa.Table.from_arrays(
            [
                _constant(self.source, len(order)),
                self.paths.take(order, pa.large_string() if wide else pa.string()),
                self.data.take(order, pa.large_binary() if wide else pa.binary()),
                _arrow(longs[0], pa.int64()),  # czxid
                _arrow(longs[1], pa.int64()),  # mzxid
                _arrow(longs[5], pa.int64()),  # pzxid
                _arrow(longs[2], ts),  # ctime
                _arrow(longs[3], ts),  # mtime
                _arrow(ints[0], pa.int32()),  # version
                _arrow(cversion, pa.int32()),
                _arrow(ints[2], pa.int32()),  # aversion
                _arrow(longs[4], pa.int64()),  # ephemeral_owner, the client's
                _arrow(data_length, pa.int32()),
                _arrow(children, pa.int32()),
            ],
            names=RAW_ZNODES.names,
        )


def client_rows(paths, data, stats, *, source: str, chroot: str | None = None):
    """Persisted nodes (snapshot-form paths, persisted stat) -> ``raw/znodes`` rows sorted by
    path. Returns (table, orphans) where orphans are row numbers whose parent is missing."""
    rows, orphans = client_order(paths, data, stats, source=source, chroot=chroot)
    return rows.take(), orphans


def client_order(paths, data, stats, *, source: str, chroot: str | None = None) -> tuple[PathOrder, np.ndarray]:
    """:func:`client_rows` as a :class:`PathOrder` (sorted, not gathered yet); ``paths`` and
    ``data`` are Arrow arrays or :class:`Spans`, ``stats`` numpy columns or
    :class:`StatRecords`. Orphans (damage: a node whose parent path is not in the tree) are
    left out of the rows with every node below them.

    Columns are built from numpy buffers directly: ``pa.array(ndarray)`` and Python scalars
    make pyarrow import pandas (~0.4 s of a short ``kaudit extract zk-snapshot``)."""
    paths, data = Spans.of(paths), Spans.of(data)
    n = len(paths)
    parent, is_root = parent_index(paths)
    orphans = np.nonzero((parent < 0) & ~is_root)[0]
    num_children = np.bincount(parent[parent >= 0], minlength=n).astype(np.int32) if n else np.zeros(0, np.int32)
    paths, rows = finish(_root_as_slash(paths, is_root), chroot)
    left_out = 0
    if len(orphans):
        lost = _below(orphans, parent)
        left_out = int(np.count_nonzero(lost[rows]))
        rows = rows[~lost[rows]]
    return PathOrder(paths, data, stats, num_children, PathSort(paths, rows), source, left_out), orphans


def _below(roots: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Mask of ``roots`` and every node below them (``parent``: each node's parent row)."""
    lost = np.zeros(len(parent), np.bool_)
    lost[roots] = True
    has_parent = parent >= 0
    while True:
        more = lost | (has_parent & lost[np.where(has_parent, parent, 0)])
        if np.array_equal(more, lost):
            return lost
        lost = more


def _arrow(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A fixed-width numpy column as an Arrow array (no pandas probe, no copy if it fits)."""
    values = np.ascontiguousarray(values, dtype=np.int32 if typ.bit_width == 32 else np.int64)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


def _constant(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _root_as_slash(paths: Spans, is_root: np.ndarray) -> Spans:
    """The root's snapshot-form path "" as the client sees it: "/" (the first byte of
    another path)."""
    roots = np.flatnonzero(is_root)
    if not len(roots):
        return paths
    values, starts, lengths = paths.values, paths.starts.copy(), paths.lengths.copy()
    other = int(np.argmax(lengths > 0))
    if lengths[other] > 0 and values[starts[other]] == ord("/"):
        starts[roots] = starts[other]
    else:  # no path to borrow a "/" from
        values = np.append(values, np.uint8(ord("/")))
        starts[roots] = len(values) - 1
    lengths[roots] = 1
    return Spans(values, starts, lengths)


def finish(paths: Spans, chroot: str | None) -> tuple[Spans, np.ndarray]:
    """Client paths (``/`` for the root) -> (the paths under ``chroot``, relative to it,
    and their rows), or without one, (the paths, the rows outside ``/zookeeper``)."""
    from pipelines.zookeeper.native import kernels as native

    root = normalize_chroot(chroot)
    prefix = np.frombuffer((root or SYSTEM_ROOT).encode(), np.uint8)
    inside = native().subtree_mask(paths.values, paths.starts, paths.lengths, prefix)
    if not root:
        return paths, np.flatnonzero(~inside)
    rows = np.flatnonzero(inside)
    rel = paths.rebased(rows, len(prefix))
    top = rows[rel.lengths[rows] == 0]  # the chroot node itself: "/", its own first byte
    rel.starts[top] -= len(prefix)
    rel.lengths[top] = 1
    return rel, rows


def sort_by_path(table: pa.Table) -> pa.Table:
    return take_rows(table, path_order(table["path"]))


def path_order(paths, rows: np.ndarray | None = None) -> np.ndarray:
    """Row numbers (``rows``, default all) ordered by path bytes, as pyarrow's sort of
    strings orders them (a numba MSD sort: no Python per row)."""
    from pipelines.zookeeper.native import kernels as native

    paths = Spans.of(paths)
    rows = np.arange(len(paths), dtype=np.int64) if rows is None else rows.astype(np.int64)
    return native().sort_strings(paths.values, paths.starts, paths.lengths, rows)


def take_rows(table: pa.Table, order: np.ndarray) -> pa.Table:
    """``table.take(order)``; string/binary columns gathered by a numba kernel (pyarrow's take
    of variable-width values in a shuffled order is several times slower)."""
    cols = []
    for field in table.schema:
        col = _array(table[field.name])
        if pa.types.is_large_string(field.type) or pa.types.is_large_binary(field.type):
            cols.append(Spans.of(col).take(order, field.type))
        elif pa.types.is_string(field.type) or pa.types.is_binary(field.type):
            wide = pa.large_string() if pa.types.is_string(field.type) else pa.large_binary()
            cols.append(Spans.of(col).take(order, wide).cast(field.type))
        elif col.null_count == 0 and _width(field.type) in (1, 2, 4, 8):
            width = _width(field.type)
            values = np.frombuffer(col.buffers()[1], f"u{width}", len(col), col.offset * width) if len(col) else \
                np.zeros(0, f"u{width}")
            cols.append(pa.Array.from_buffers(field.type, len(order), [None, pa.py_buffer(values[order])]))
        else:
            cols.append(col.take(pa.Array.from_buffers(pa.int64(), len(order), [None, pa.py_buffer(order)])))
    return pa.Table.from_arrays(cols, schema=table.schema)


def _width(typ: pa.DataType) -> int:
    """Bytes per value of a fixed-width type (0 for others and for booleans)."""
    try:
        bits = typ.bit_width
    except ValueError:
        return 0
    return bits // 8 if bits % 8 == 0 and not pa.types.is_decimal(typ) else 0


def _array(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(int64 offsets, uint8 values, validity or None) of a large string/binary array."""
    arr = _array(arr)
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, n + 1, arr.offset * 8) if n else np.zeros(1, np.int64)
    values = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    valid = None
    if arr.null_count:  # the validity bitmap, unpacked (to_numpy would make pyarrow import pandas)
        bits = np.unpackbits(np.frombuffer(bufs[0], np.uint8), bitorder="little")
        valid = bits[arr.offset : arr.offset + n].astype(np.bool_)
    return offsets, values, valid


def to_schema(table: pa.Table) -> pa.Table:
    """The ``raw/znodes`` Arrow schema (32-bit offsets), for writing (a cast imports
    pyarrow.compute, ~0.06 s: none when the table already has it)."""
    table = table.select(RAW_ZNODES.names)
    return table if table.schema.equals(RAW_ZNODES) else table.cast(RAW_ZNODES)
