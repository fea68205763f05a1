"""Every change the txn-log replay makes to the znodes of consumer coordination, kept as
``raw/znode_changes`` rows: creates, data writes and deletes of

- ``/consumers/[group]/ids/[consumer]``            (kind ``consumer_ids``)
- ``/consumers/[group]/owners/[topic]/[partition]`` (kind ``consumer_owners``)
- ``/consumers/[group]/offsets/[topic]/[partition]`` (kind ``consumer_offsets``)
- ``/brokers/ids/[broker]``                          (kind ``broker_ids``)
- ``/brokers/topics/[topic]``                        (kind ``broker_topics``)

with the txn's zxid, time and session (``TxnHeader.clientId``). ``seq`` orders the changes
of one txn (the sub-txns of a multi, the ephemerals a closeSession deletes). The nodes of
those kinds the history's first snapshot already holds are rows of op ``snapshot`` (zxid: the
snapshot's, time: the node's mtime), so the history starts from a known state (which snapshot
that is: :mod:`pipelines.zookeeper.chain`).

The replay itself decodes txns one by one (:mod:`pipelines.zookeeper.replay`); the recorder
adds one substring test per change and appends to column lists, which become an Arrow batch
every :data:`CHUNK` changes (a long history is held as compact columns, not Python objects).
Which paths are kept, their kind and the chroot are decided on the Arrow columns at the end,
not per change. A path that is not UTF-8 (damage) cannot be a row: its change is left out and
listed in :attr:`ChangeLog.left_out` with the file and byte it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.warehouse.tables import RAW_ZNODE_CHANGES

KINDS = {
    "consumer_ids": r"^/consumers/[^/]+/ids/[^/]+$",
    "consumer_owners": r"^/consumers/[^/]+/owners/[^/]+/[^/]+$",
    "consumer_offsets": r"^/consumers/[^/]+/offsets/[^/]+/[^/]+$",
    "broker_ids": r"^/brokers/ids/[^/]+$",
    "broker_topics": r"^/brokers/topics/[^/]+$",
}
_MARKS = ("/consumers/", "/brokers/")
CHUNK = 1 << 16  # changes per Arrow batch
_COLUMNS = ("zxid", "seq", "time", "session", "op", "path", "value", "version", "ephemeral_owner")
_TYPES = (pa.int64(), pa.int32(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.binary(), pa.int32(),
          pa.int64())
_SCHEMA = pa.schema(list(zip(_COLUMNS, _TYPES, strict=True)))


def _column(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A numpy column as an Arrow one from its buffer (``pa.array(ndarray)`` imports pandas)."""
    values = np.ascontiguousarray(values, dtype=np.int32 if typ.bit_width == 32 else np.int64)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


def is_utf8(path: str) -> bool:
    """Whether ``path`` (bytes decoded with surrogate escapes) was valid UTF-8."""
    if path.isascii():
        return True
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


class ChangeLog:
    """Column lists the replay appends to (only paths holding ``/consumers/`` or ``/brokers/``)."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {k: [] for k in _COLUMNS}
        self.batches: list[pa.RecordBatch] = []
        self.baseline: pa.Table | None = None
        self.left_out: list[tuple[str, str, str]] = []  # (file:byte, path, op): paths that are not UTF-8
        self.not_at_start: set[str] = set()  # snapshot nodes a replayed create made after its zxid (fuzzy)
        self._zxid = None
        self._seq = 0

    def add(self, zxid: int, time: int, session: int, op: str, path: str, value: bytes | None,
            version: int | None, owner: int | None, where=None) -> None:
        """One change; ``where`` (the txn: ``file``, ``offset``) locates a path that is not UTF-8."""
        if _MARKS[0] not in path and _MARKS[1] not in path:
            return
        if zxid != self._zxid:
            self._zxid, self._seq = zxid, 0
        if not is_utf8(path):
            self.left_out.append((f"{where.file}:{where.offset}" if where is not None else f"zxid {zxid:#x}", path, op))
            self._seq += 1
            return
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
        if len(c["zxid"]) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        c = self.cols
        if c["zxid"]:
            self.batches.append(pa.record_batch([pa.array(c[k], t) for k, t in zip(_COLUMNS, _TYPES, strict=True)],
                                                schema=_SCHEMA))
            for v in c.values():
                v.clear()

    @property
    def changes(self) -> int:
        """Changes recorded (the snapshot rows aside)."""
        return sum(b.num_rows for b in self.batches) + len(self.cols["zxid"])

    def start_from(self, paths: pa.Array, data: pa.Array, cols: dict[str, np.ndarray], zxid: int,
                   where=None) -> None:
        """The snapshot's nodes (Arrow paths/data, stat columns) as ``snapshot`` rows;
        ``where(i)`` is the file:byte of node ``i``, for a path that is not UTF-8 (left out)."""
        paths = paths.cast(pa.large_string())
        keep = pc.or_(pc.match_substring(paths, _MARKS[0]), pc.match_substring(paths, _MARKS[1]))
        hits = pc.indices_nonzero(keep)  # uint64, no nulls; read from its buffer (to_numpy imports pandas)
        rows = np.frombuffer(hits.buffers()[1], np.uint64, len(hits), hits.offset * 8).astype(np.int64)
        picked = paths.take(_column(rows, pa.int64()))
        try:
            picked.validate(full=True)
        except pa.ArrowInvalid:  # damage: a path that is not UTF-8 cannot be a row
            raw = picked.view(pa.large_binary()).to_pylist()
            good = np.ones(len(rows), np.bool_)
            for k, b in enumerate(raw):
                path = b.decode("utf-8", "surrogateescape")
                if not is_utf8(path):
                    good[k] = False
                    i = int(rows[k])
                    self.left_out.append((where(i) if where is not None else f"snapshot node {i}", path, "snapshot"))
            rows = rows[good]
        n = len(rows)
        idx = _column(rows, pa.int64())
        self.baseline = pa.Table.from_arrays([  # (pa.table of a dict imports pandas)
            _column(np.full(n, zxid), pa.int64()),
            _column(np.zeros(n), pa.int32()),
            _column(cols["mtime"][rows], pa.int64()),
            _column(np.zeros(n), pa.int64()),
            pa.array(["snapshot"] * n, pa.string()),
            paths.take(idx).cast(pa.string()),
            data.take(idx).cast(pa.binary()),
            _column(cols["version"][rows], pa.int32()),
            _column(cols["ephemeral_owner"][rows], pa.int64()),
        ], schema=_SCHEMA)

    def table(self, upto: int | None = None, chroot: str | None = None) -> pa.Table:
        """The ``raw/znode_changes`` rows up to zxid ``upto`` (the published tree's), paths
        relative to ``chroot``, in (zxid, seq) order."""
        self._flush()
        t = pa.Table.from_batches(self.batches, _SCHEMA)
        if self.baseline is not None:
            base = self.baseline
            if self.not_at_start:
                base = base.filter(pc.invert(pc.is_in(base["path"], pa.array(sorted(self.not_at_start), pa.string()))))
            t = pa.concat_tables([base, t])
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


# the span of a data dir's history (pipelines.zookeeper.chain): where it starts, how far it goes
@dataclass
class History:
    changes: ChangeLog
    snapshot: str | None  # the snapshot it starts from (None: the empty tree)
    start_zxid: int  # the state its snapshot rows hold
    end_zxid: int  # the published tree's
    txns: int  # replayed from the start to the end
    snapshots: int  # snapshot files from its start to the published tree's, both included
    snapshots_checked: int  # later snapshots whose stored digest the replay matched
    first_time: int | None = None  # ms: the first txn replayed
    last_time: int | None = None  # ms: the last one
    cuts: list[str] = field(default_factory=list)  # why older starts were not used

    def meta(self) -> dict:
        return {
            "snapshot": self.snapshot,
            "start_zxid": self.start_zxid,
            "end_zxid": self.end_zxid,
            "first_txn_ms": self.first_time,
            "last_txn_ms": self.last_time,
            "txns": self.txns,
            "snapshots": self.snapshots,
            "snapshots_checked": self.snapshots_checked,
            "cuts": list(self.cuts),
        }
