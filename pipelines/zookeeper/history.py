"""Every change the txn-log replay makes to the znodes of consumer coordination, kept as
``raw/znode_changes`` rows (issue 21): creates, data writes and deletes of

- ``/consumers/[group]/ids/[consumer]``            (kind ``consumer_ids``)
- ``/consumers/[group]/owners/[topic]/[partition]`` (kind ``consumer_owners``)
- ``/consumers/[group]/offsets/[topic]/[partition]`` (kind ``consumer_offsets``)
- ``/brokers/ids/[broker]``                          (kind ``broker_ids``)
- ``/brokers/topics/[topic]``                        (kind ``broker_topics``)

with the txn's zxid, time and session (``TxnHeader.clientId``). ``seq`` orders the changes
of one txn (the sub-txns of a multi, the ephemerals a closeSession deletes). The nodes of
those kinds the snapshot already holds are rows of op ``snapshot`` (zxid: the snapshot's,
time: the node's mtime), so the history starts from a known state.

The replay itself decodes txns one by one (:mod:`pipelines.zookeeper.replay`); the recorder
adds one substring test per change and appends to column lists. Which paths are kept, their
kind and the chroot are decided on the Arrow columns at the end, not per change.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.tables import RAW_ZNODE_CHANGES

KINDS = {
    "consumer_ids": r"^/consumers/[^/]+/ids/[^/]+$",
    "consumer_owners": r"^/consumers/[^/]+/owners/[^/]+/[^/]+$",
    "consumer_offsets": r"^/consumers/[^/]+/offsets/[^/]+/[^/]+$",
    "broker_ids": r"^/brokers/ids/[^/]+$",
    "broker_topics": r"^/brokers/topics/[^/]+$",
}
_MARKS = ("/consumers/", "/brokers/")


class ChangeLog:
    """Column lists the replay appends to (only paths holding ``/consumers/`` or ``/brokers/``)."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {k: [] for k in ("zxid", "seq", "time", "session", "op", "path", "value",
                                                      "version", "ephemeral_owner")}
        self.baseline: pa.Table | None = None
        self._zxid = None
        self._seq = 0

    def add(self, zxid: int, time: int, session: int, op: str, path: str, value: bytes | None,
            version: int | None, owner: int | None) -> None:
        if _MARKS[0] not in path and _MARKS[1] not in path:
            return
        if zxid != self._zxid:
            self._zxid, self._seq = zxid, 0
        c = self.cols
        c["zxid"].append(zxid)
        c["seq"].append(self._seq)
        c["time"].append(time)
        c["session"].append(session)
        c["op"].append(op)
        c["path"].append(path)
        c["value"].append(value)
        c["version"].append(version)
        c["ephemeral_owner"].append(owner)
        self._seq += 1

    def start_from(self, paths: pa.Array, data: pa.Array, cols: dict[str, np.ndarray], zxid: int) -> None:
        """The snapshot's nodes (Arrow paths/data, stat columns) as ``snapshot`` rows."""
        paths = paths.cast(pa.large_string())
        keep = pc.or_(pc.match_substring(paths, _MARKS[0]), pc.match_substring(paths, _MARKS[1]))
        rows = np.flatnonzero(keep.to_numpy(zero_copy_only=False))
        n = len(rows)
        idx = pa.array(rows)
        self.baseline = pa.table({
            "zxid": pa.array(np.full(n, zxid, np.int64)),
            "seq": pa.array(np.zeros(n, np.int32)),
            "time": pa.array(cols["mtime"][rows].astype(np.int64)),
            "session": pa.array(np.zeros(n, np.int64)),
            "op": pa.array(["snapshot"] * n, pa.string()),
            "path": paths.take(idx).cast(pa.string()),
            "value": data.take(idx).cast(pa.binary()),
            "version": pa.array(cols["version"][rows].astype(np.int32)),
            "ephemeral_owner": pa.array(cols["ephemeral_owner"][rows].astype(np.int64)),
        })

    def table(self, upto: int | None = None, chroot: str | None = None) -> pa.Table:
        """The ``raw/znode_changes`` rows up to zxid ``upto`` (the published tree's), paths
        relative to ``chroot``, in (zxid, seq) order."""
        c = self.cols
        t = pa.table({
            "zxid": pa.array(c["zxid"], pa.int64()),
            "seq": pa.array(c["seq"], pa.int32()),
            "time": pa.array(c["time"], pa.int64()),
            "session": pa.array(c["session"], pa.int64()),
            "op": pa.array(c["op"], pa.string()),
            "path": pa.array(c["path"], pa.string()),
            "value": pa.array(c["value"], pa.binary()),
            "version": pa.array(c["version"], pa.int32()),
            "ephemeral_owner": pa.array(c["ephemeral_owner"], pa.int64()),
        })
        if self.baseline is not None:
            t = pa.concat_tables([self.baseline, t])
        if upto is not None:
            t = t.filter(pc.less_equal(t["zxid"], upto))
        return classify(t, chroot)


def classify(t: pa.Table, chroot: str | None) -> pa.Table:
    """Rows of ``t`` (path still absolute) under ``chroot`` whose path is one of :data:`KINDS`,
    with their ``kind``, as :data:`RAW_ZNODE_CHANGES`."""
    path = t["path"]
    if chroot:
        inside = pc.starts_with(path, chroot + "/")
        t = t.filter(inside)
        path = pc.utf8_slice_codeunits(t["path"], len(chroot))
    kind = pa.nulls(t.num_rows, pa.string())
    for name, pattern in KINDS.items():
        kind = pc.if_else(pc.match_substring_regex(path, pattern), name, kind)
    t = t.set_column(t.schema.get_field_index("path"), "path", path).append_column("kind", kind)
    t = t.filter(pc.is_valid(kind))
    time = t["time"].cast(pa.int64()).cast(pa.timestamp("ms", "UTC"))
    t = t.set_column(t.schema.get_field_index("time"), "time", time)
    return t.select(RAW_ZNODE_CHANGES.names).cast(RAW_ZNODE_CHANGES)
