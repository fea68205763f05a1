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

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.tables import RAW_ZNODES

CONTAINER_OWNER = -(1 << 63)
TTL_MASK = np.int64(-(1 << 56))  # 0xFF00000000000000
SYSTEM_ROOT = "/zookeeper"
STAT_COLUMNS = ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeral_owner")


def normalize_chroot(chroot: str | None) -> str:
    """'' for no chroot, else '/a/b' (no trailing slash)."""
    if not chroot or chroot.strip("/") == "":
        return ""
    return "/" + chroot.strip("/")


def client_owner(owner: np.ndarray) -> np.ndarray:
    special = (owner == CONTAINER_OWNER) | ((owner & TTL_MASK) == TTL_MASK)
    return np.where(special, 0, owner).astype(np.int64, copy=False)


def parent_index(paths: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """For snapshot-form paths (root ""): each node's parent row (-1 for the root or a
    missing parent) and whether the node is the root."""
    from pipelines.zookeeper.native import kernels as native

    kernels = native()

    paths = paths.cast(pa.large_string()) if paths.type != pa.large_string() else paths
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    n = len(paths)
    _, off_buf, val_buf = paths.buffers()
    offsets = np.frombuffer(off_buf, np.int64, n + 1, paths.offset * 8)
    values = np.frombuffer(val_buf, np.uint8) if val_buf is not None and val_buf.size else np.zeros(1, np.uint8)
    plen = kernels.parent_lengths(offsets, values)
    is_root = plen < 0
    idx, ok = kernels.preorder_parents(offsets, values, plen)
    if ok:  # a snapshot as written: no hashing needed
        return idx, is_root
    sizes = np.maximum(plen, 0)
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), np.uint8)
    kernels.gather(values, offsets[:-1].copy(), plen, out_offsets, out)
    parents = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(out_offsets), pa.py_buffer(out)])
    idx = pc.index_in(parents, value_set=paths).to_numpy(zero_copy_only=False)
    idx = np.where(np.isnan(idx), -1, idx).astype(np.int64) if idx.dtype.kind == "f" else idx.astype(np.int64)
    idx[is_root] = -1
    return idx, is_root


@dataclass
class PathOrder:
    """Rows in path order, not yet gathered: ``table`` (no ``source`` column) taken in
    ``order``. A writer gathers one batch while the previous one is being written."""

    table: pa.Table
    order: np.ndarray
    source: str

    @property
    def num_rows(self) -> int:
        return len(self.order)

    def take(self, start: int = 0, stop: int | None = None) -> pa.Table:
        """Rows ``start:stop`` of the sorted ``raw/znodes`` rows."""
        t = take_rows(self.table, self.order[start:stop])
        return t.add_column(0, pa.field("source", pa.string()), _constant(self.source, t.num_rows))


def client_rows(paths: pa.Array, data: pa.Array, stats: dict[str, np.ndarray], *, source: str, chroot: str | None = None):
    """Persisted nodes (snapshot-form paths, persisted stat) -> ``raw/znodes`` rows sorted by
    path. Returns (table, orphans) where orphans are row numbers whose parent is missing."""
    rows, orphans = client_order(paths, data, stats, source=source, chroot=chroot)
    return rows.take(), orphans


def client_order(paths: pa.Array, data: pa.Array, stats: dict[str, np.ndarray], *, source: str,
                 chroot: str | None = None) -> tuple[PathOrder, np.ndarray]:
    """:func:`client_rows` as a :class:`PathOrder` (sorted, not gathered yet).

    Columns are built from numpy buffers directly: ``pa.array(ndarray)`` and Python scalars
    make pyarrow import pandas (~0.4 s of a short ``kaudit extract zk-snapshot``)."""
    n = len(paths)
    parent, is_root = parent_index(paths)
    orphans = np.nonzero((parent < 0) & ~is_root)[0]
    num_children = np.bincount(parent[parent >= 0], minlength=n).astype(np.int32) if n else np.zeros(0, np.int32)
    cversion = (2 * stats["cversion"].astype(np.int64) - num_children).astype(np.int32)
    data = data.cast(pa.large_binary())
    offsets, _, valid = _buffers(data)
    lengths = np.diff(offsets).astype(np.int32)
    if valid is not None:
        lengths[~valid] = 0
    ts = pa.timestamp("ms", tz="UTC")
    table = pa.Table.from_arrays(
        [
            _root_as_slash(paths.cast(pa.large_string()), is_root),
            data,
            _arrow(stats["czxid"], pa.int64()),
            _arrow(stats["mzxid"], pa.int64()),
            _arrow(stats["pzxid"], pa.int64()),
            _arrow(stats["ctime"], ts),
            _arrow(stats["mtime"], ts),
            _arrow(stats["version"], pa.int32()),
            _arrow(cversion, pa.int32()),
            _arrow(stats["aversion"], pa.int32()),
            _arrow(client_owner(stats["ephemeral_owner"]), pa.int64()),
            _arrow(lengths, pa.int32()),
            _arrow(num_children, pa.int32()),
        ],
        names=["path", "data", "czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "aversion",
               "ephemeral_owner", "data_length", "num_children"],
    )
    table, order = finish(table, chroot)  # the constant source column is added per batch
    return PathOrder(table, order, source), orphans


def _arrow(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A fixed-width numpy column as an Arrow array (no pandas probe, no copy if it fits)."""
    values = np.ascontiguousarray(values, dtype=np.int32 if typ.bit_width == 32 else np.int64)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


def _constant(text: str, n: int) -> pa.Array:
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _root_as_slash(paths: pa.Array, is_root: np.ndarray) -> pa.Array:
    """The root's snapshot-form path "" as the client sees it: "/"."""
    roots = np.flatnonzero(is_root)
    if not len(roots):
        return paths
    offsets, values, _ = _buffers(paths)
    shift = np.zeros(len(offsets), np.int64)
    shift[roots + 1] = 1
    out_offsets = offsets + np.cumsum(shift)
    out = np.insert(values[: offsets[-1]], offsets[roots], ord("/")).astype(np.uint8, copy=False)
    return pa.Array.from_buffers(pa.large_string(), len(paths), [None, pa.py_buffer(out_offsets), pa.py_buffer(out)])


def finish(table: pa.Table, chroot: str | None) -> tuple[pa.Table, np.ndarray]:
    """Drop the ``/zookeeper`` subtree (no chroot) or re-root below ``chroot``: (table, the
    order of its rows by path)."""
    root = normalize_chroot(chroot)
    path = table["path"]
    if root:
        keep = pc.or_(pc.equal(path, root), pc.starts_with(path, root + "/"))
        table = table.filter(keep)
        rel = pc.utf8_slice_codeunits(table["path"], start=len(root))  # code points, like len()
        rel = pc.if_else(pc.equal(rel, ""), pa.scalar("/", rel.type), rel)
        table = table.set_column(table.schema.get_field_index("path"), "path", rel)
        return table, path_order(table["path"])
    from pipelines.zookeeper.native import kernels as native

    offsets, values, _ = _buffers(_array(path).cast(pa.large_string()))
    system = native().subtree_mask(offsets, values, np.frombuffer(SYSTEM_ROOT.encode(), np.uint8))
    rows = np.flatnonzero(~system)  # filtered and sorted in one take
    return table, path_order(path, rows)


def sort_by_path(table: pa.Table) -> pa.Table:
    return take_rows(table, path_order(table["path"]))


def path_order(paths, rows: np.ndarray | None = None) -> np.ndarray:
    """Row numbers (``rows``, default all) ordered by path bytes, as pyarrow's sort of
    strings orders them (a numba MSD sort: no Python per row)."""
    from pipelines.zookeeper.native import kernels as native

    kernels = native()

    offsets, values, _ = _buffers(_array(paths).cast(pa.large_string()))
    if rows is None:
        rows = np.arange(len(offsets) - 1, dtype=np.int64)
    return kernels.sort_strings(offsets, values, rows.astype(np.int64))


def take_rows(table: pa.Table, order: np.ndarray) -> pa.Table:
    """``table.take(order)``; string/binary columns gathered by a numba kernel (pyarrow's take
    of variable-width values in a shuffled order is several times slower)."""
    cols = []
    for field in table.schema:
        col = _array(table[field.name])
        if pa.types.is_large_string(field.type) or pa.types.is_large_binary(field.type):
            cols.append(_take_binary(col, order))
        elif pa.types.is_string(field.type) or pa.types.is_binary(field.type):
            wide = pa.large_string() if pa.types.is_string(field.type) else pa.large_binary()
            cols.append(_take_binary(col.cast(wide), order).cast(field.type))
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


def _take_binary(arr: pa.Array, order: np.ndarray) -> pa.Array:
    from pipelines.zookeeper.native import kernels as native

    kernels = native()

    offsets, values, valid = _buffers(arr)
    lens = np.diff(offsets)
    if valid is not None:
        lens = np.where(valid, lens, -1)
    lens = lens[order]
    sizes = np.maximum(lens, 0)
    out_offsets = np.zeros(len(order) + 1, np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), np.uint8)
    kernels.gather(values, offsets[:-1][order], lens, out_offsets, out)
    bitmap, nulls = None, 0
    if valid is not None:
        ok = valid[order]
        nulls = int(len(ok) - np.count_nonzero(ok))
        bitmap = pa.py_buffer(np.packbits(ok, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(arr.type, len(order), [bitmap, pa.py_buffer(out_offsets), pa.py_buffer(out)],
                                 null_count=nulls)


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
    """The ``raw/znodes`` Arrow schema (32-bit offsets), for writing."""
    return table.select(RAW_ZNODES.names).cast(RAW_ZNODES)
