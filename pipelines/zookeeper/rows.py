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
    return np.where(special, 0, owner).astype(np.int64)


def parent_index(paths: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """For snapshot-form paths (root ""): each node's parent row (-1 for the root or a
    missing parent) and whether the node is the root."""
    from pipelines.zookeeper import kernels

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


def client_rows(paths: pa.Array, data: pa.Array, stats: dict[str, np.ndarray], *, source: str, chroot: str | None = None):
    """Persisted nodes (snapshot-form paths, persisted stat) -> ``raw/znodes`` rows sorted by
    path. Returns (table, orphans) where orphans are row numbers whose parent is missing."""
    n = len(paths)
    parent, is_root = parent_index(paths)
    orphans = np.nonzero((parent < 0) & ~is_root)[0]
    num_children = np.bincount(parent[parent >= 0], minlength=n).astype(np.int32) if n else np.zeros(0, np.int32)
    cversion = (2 * stats["cversion"].astype(np.int64) - num_children).astype(np.int32)
    lengths = pc.fill_null(pc.binary_length(data), 0).to_numpy(zero_copy_only=False).astype(np.int32)
    client_paths = pc.if_else(is_root, pa.scalar("/", pa.large_string()), paths.cast(pa.large_string()))
    table = pa.table(
        {
            "source": pc.fill_null(pa.nulls(n, pa.string()), source),
            "path": client_paths,
            "data": data.cast(pa.large_binary()),
            "czxid": stats["czxid"],
            "mzxid": stats["mzxid"],
            "pzxid": stats["pzxid"],
            "ctime": pa.array(stats["ctime"], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            "mtime": pa.array(stats["mtime"], pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
            "version": stats["version"].astype(np.int32),
            "cversion": cversion,
            "aversion": stats["aversion"].astype(np.int32),
            "ephemeral_owner": client_owner(stats["ephemeral_owner"]),
            "data_length": lengths,
            "num_children": num_children,
        }
    )
    return finish(table, chroot), orphans


def finish(table: pa.Table, chroot: str | None) -> pa.Table:
    """Drop the ``/zookeeper`` subtree (no chroot) or re-root below ``chroot``; sort by path."""
    root = normalize_chroot(chroot)
    path = table["path"]
    if root:
        keep = pc.or_(pc.equal(path, root), pc.starts_with(path, root + "/"))
        table = table.filter(keep)
        rel = pc.utf8_slice_codeunits(table["path"], start=len(root))  # code points, like len()
        rel = pc.if_else(pc.equal(rel, ""), pa.scalar("/", rel.type), rel)
        table = table.set_column(table.schema.get_field_index("path"), "path", rel)
    else:
        system = pc.or_(pc.equal(path, SYSTEM_ROOT), pc.starts_with(path, SYSTEM_ROOT + "/"))
        table = table.filter(pc.invert(system))
    return sort_by_path(table)


def sort_by_path(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, sort_keys=[("path", "ascending")]))


def to_schema(table: pa.Table) -> pa.Table:
    """The ``raw/znodes`` Arrow schema (32-bit offsets), for writing."""
    return table.select(RAW_ZNODES.names).cast(RAW_ZNODES)
