"""Replaying transaction-log txns onto a snapshot's tree, as ``DataTree.processTxn`` does.

The tree stays columnar: numpy stat columns (mutated in place), Arrow path/data arrays, a
liveness mask, and Python objects only for what the logs touch (a path -> row index built on
first use, new paths, replaced data). The columns and arrays are decoded from the snapshot
bytes when the first txn needs them: a read without logs never decodes them here. Semantics follow
``DataTree`` of 3.6+ and hold for the fuzzy window (``FileTxnSnapLog.processTransaction``
ignores NONODE/NODEEXISTS there):

- create*: parent must exist, an existing node is left alone; the parent's cversion becomes
  the txn's parentCVersion (or +1 when -1, ``CreateTxnV0``) only when larger, and then its
  pzxid the txn zxid. Containers own Long.MIN_VALUE, TTL nodes 0xFF00.. | ttl, ephemerals
  the session id.
- delete/deleteContainer: the parent's pzxid rises to the zxid (even when the child is
  already gone), the node goes.
- setData/reconfig: data, mtime, mzxid, version. setACL: aversion.
- multi: nothing when a sub-txn is an error, else every sub-txn in order.
- closeSession: deletes the txn's path list (3.6+) and every ephemeral of the session.

With :attr:`Tree.history` set (a :class:`~pipelines.zookeeper.history.ChangeLog`), every
create, data write and delete of a txn is recorded there too, also one that finds the tree
already changed or its node gone: the leader applied it, and a fuzzy snapshot holds some of the
txns after its name (a node created later is taken out of the snapshot's rows, as it did not
exist at the snapshot's zxid) and misses nodes deleted while it was written.

The tree digest is kept up to date so the snapshot's digest (fuzzy snapshots) and the
TxnDigest of every txn after it can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from pipelines.zookeeper.digest import MASK, node_digest, signed
from pipelines.zookeeper.kernel_tables import CONTAINER_OWNER
from pipelines.zookeeper.rows import PERSISTED_STAT, Spans, StatRecords
from pipelines.zookeeper.snapshot import Snapshot
from pipelines.zookeeper.txnlog import Txn

if TYPE_CHECKING:
    from pipelines.zookeeper.history import ChangeLog

STATS = PERSISTED_STAT
INT32 = {"version", "cversion", "aversion"}
TTL_BITS = -(1 << 56)  # EphemeralType.TTL: 0xFF00000000000000 | ttl


@dataclass
class ReplayStats:
    applied: int = 0
    ignored: int = 0  # NONODE / NODEEXISTS, expected in the fuzzy window
    by_op: dict[str, int] = field(default_factory=dict)


class Tree:
    def __init__(self, snap: Snapshot | None):
        self.file = snap.file if snap is not None else None
        self.compressed = snap is not None and snap.compression != "none"
        if snap is not None:
            nodes = snap.nodes
            self.spans = (nodes.path_spans(), nodes.data_spans())  # copied to Arrow when a txn needs them
            self.records = nodes.stat_records()  # decoded into self.cols when a txn needs them
            self.node_digests = nodes.digest
            self.digest_sum = int(snap.computed_digest) & MASK
        else:  # ZooKeeper's initial tree: root, /zookeeper, /zookeeper/quota, /zookeeper/config
            self.spans = (Spans.of(pa.array(["", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"])),
                          Spans.of(pa.array([b""] * 4)))
            self.records = None
            self.cols = {name: np.zeros(4, np.int32 if name in INT32 else np.int64) for name in STATS}
            self.cols["aversion"][3] = -1  # DataTree.addConfigNode: setACL(READ_ACL_UNSAFE, -1)
            self.node_digests = np.zeros(4, np.uint32)
            self.digest_sum = 0
        self.n_base = len(self.spans[0])
        self.n = self.n_base
        self.alive = np.ones(self.n, np.bool_)
        self.index: dict[str, int] | None = None
        self.new_paths: list[str] = []
        self.new_data: dict[int, bytes | None] = {}
        self.origins: dict[str, str] = {}  # file:byte of the txn that created a path that is not UTF-8
        self.stats = ReplayStats()
        self.history: ChangeLog | None = None
        self._txn: Txn | None = None
        if snap is None:
            for i in range(2):  # the root and /zookeeper count; /zookeeper/* do not
                self._rehash(i)

    def keep_history(self, zxid: int) -> ChangeLog:
        """Record the changes from now on (and the nodes already there, as of ``zxid``)."""
        from pipelines.zookeeper.history import ChangeLog  # and pyarrow.compute: only when logs are replayed

        self.history = ChangeLog()
        self.history.start_from(self.paths, self.data, {k: v[: self.n] for k, v in self.cols.items()}, zxid,
                                self.location_of)
        return self.history

    def _record(self, op: str, path: str, zxid: int, value=None, version=None, owner=None) -> None:
        if self.history is not None:
            txn = self._txn
            self.history.add(zxid, txn.time if txn else 0, txn.client_id if txn else 0, op, path, value, version, owner,
                             txn)

    def location_of(self, i: int) -> str | None:
        """Where node ``i`` comes from: ``file:byte`` of its record in the snapshot (of the
        uncompressed stream when the file is compressed) or of the txn that created it."""
        if i >= self.n_base:
            path = self.new_paths[i - self.n_base]
            return self.origins.get(path)
        if self.file is None:
            return None
        at = f"{self.file}:{int(self.spans[0].starts[i]) - 4}"  # the path's length field starts the record
        return at + (" (uncompressed)" if self.compressed else "")

    def origin(self, path: bytes) -> str | None:
        """:meth:`location_of` the live node whose snapshot-form path is ``path``."""
        text = path.decode("utf-8", "surrogateescape")
        if text in self.origins:
            return self.origins[text]
        import pyarrow.compute as pc

        hits = np.flatnonzero(pc.equal(self._path_bytes, pa.scalar(path, pa.large_binary()))
                              .to_numpy(zero_copy_only=False))
        live = [int(i) for i in hits if self.alive[i]]
        return self.location_of(live[0]) if live else None

    # -- storage -------------------------------------------------------------
    @cached_property
    def cols(self) -> dict[str, np.ndarray]:
        """The persisted stat columns (:data:`STATS`), changed in place by the replay."""
        return self.records.take()

    @cached_property
    def digests(self) -> np.ndarray:
        """Each node's digest, changed in place by the replay."""
        return self.node_digests.astype(np.int64)

    @cached_property
    def paths(self) -> pa.Array:
        return self.spans[0].take(None, pa.large_string())

    @cached_property
    def _path_bytes(self) -> pa.Array:
        return self.paths.view(pa.large_binary())

    @cached_property
    def data(self) -> pa.Array:
        return self.spans[1].take(None, pa.large_binary())

    def _compute(self, i: int) -> int:
        c = self.cols
        return node_digest(
            self.path_of(i), self.data_of(i),
            int(c["czxid"][i]), int(c["mzxid"][i]), int(c["pzxid"][i]), int(c["ctime"][i]), int(c["mtime"][i]),
            int(c["version"][i]), int(c["cversion"][i]), int(c["aversion"][i]), int(c["ephemeral_owner"][i]),
        )

    def path_of(self, i: int) -> str:
        """The path of row ``i``; bytes that are not UTF-8 (damage) as surrogate escapes."""
        if i >= self.n_base:
            return self.new_paths[i - self.n_base]
        return self._path_bytes[i].as_py().decode("utf-8", "surrogateescape")

    def _all_paths(self) -> list[str]:
        try:
            return self.paths.to_pylist()
        except UnicodeDecodeError:  # damaged paths: kept as they are, quarantined when written
            return [b.decode("utf-8", "surrogateescape") for b in self._path_bytes.to_pylist()]

    def data_of(self, i: int) -> bytes | None:
        if i in self.new_data:
            return self.new_data[i]
        return self.data[i].as_py()

    def lookup(self, path: str) -> int | None:
        if path == "/":  # DataTree keeps the root under "" and "/"
            path = ""
        if self.index is None:
            self.index = {p: i for i, p in enumerate(self._all_paths())}
        return self.index.get(path)

    def _grow(self) -> None:
        cap = self.alive.shape[0]
        if self.n < cap:
            return
        extra = max(1024, cap)
        for name, col in self.cols.items():
            self.cols[name] = np.concatenate([col, np.zeros(extra, col.dtype)])
        self.digests = np.concatenate([self.digests, np.zeros(extra, np.int64)])
        self.alive = np.concatenate([self.alive, np.zeros(extra, np.bool_)])

    def _unhash(self, i: int) -> None:
        self.digest_sum = (self.digest_sum - int(self.digests[i])) & MASK

    def _rehash(self, i: int) -> None:
        d = self._compute(i)
        self.digests[i] = d
        self.digest_sum = (self.digest_sum + d) & MASK

    @property
    def digest(self) -> int:
        return signed(self.digest_sum)

    # -- DataTree operations -------------------------------------------------
    def create(self, path: str, data, owner: int, parent_cversion: int, zxid: int, time: int) -> bool:
        parent_path = path[: path.rfind("/")]
        p = self.lookup(parent_path)
        i = self.lookup(path)
        if p is None or i is not None:
            if i is not None and self.history is not None and self.cols["czxid"][i] >= zxid:
                self.history.not_at_start.add(path)  # the snapshot holds this create: no node at its zxid
            if i is None or self.cols["czxid"][i] >= zxid:
                self._record("create", path, zxid, data, 0, owner)
            return False
        c = self.cols
        self._unhash(p)
        if parent_cversion == -1:
            parent_cversion = int(c["cversion"][p]) + 1
        if parent_cversion > c["cversion"][p]:
            c["cversion"][p] = parent_cversion
            c["pzxid"][p] = zxid
        self._rehash(p)
        self._grow()
        i = self.n
        self.n += 1
        for name, value in (("czxid", zxid), ("mzxid", zxid), ("pzxid", zxid), ("ctime", time), ("mtime", time),
                            ("version", 0), ("cversion", 0), ("aversion", 0), ("ephemeral_owner", owner)):
            c[name][i] = value
        self.alive[i] = True
        self.new_paths.append(path)
        self.new_data[i] = data
        self.index[path] = i
        if not path.isascii() and self._txn is not None:
            from pipelines.zookeeper.history import is_utf8

            if not is_utf8(path):
                self.origins[path] = f"{self._txn.file}:{self._txn.offset}"
        self._rehash(i)
        self._record("create", path, zxid, data, 0, owner)
        return True

    def delete(self, path: str, zxid: int) -> bool:
        parent_path = path[: path.rfind("/")]
        p = self.lookup(parent_path)
        if p is not None and zxid > self.cols["pzxid"][p]:  # also when the child is gone already
            self._unhash(p)
            self.cols["pzxid"][p] = zxid
            self._rehash(p)
        self._record("delete", path, zxid)
        i = self.lookup(path)
        if p is None or i is None:
            return False
        self._unhash(i)
        self.alive[i] = False
        del self.index[path]
        self.new_data.pop(i, None)
        return True

    def set_data(self, path: str, data, version: int, zxid: int, time: int) -> bool:
        self._record("set", path, zxid, data, version)
        i = self.lookup(path)
        if i is None:
            return False
        self._unhash(i)
        self.new_data[i] = data
        self.cols["mtime"][i] = time
        self.cols["mzxid"][i] = zxid
        self.cols["version"][i] = version
        self._rehash(i)
        return True

    def set_acl(self, path: str, version: int) -> bool:
        i = self.lookup(path)
        if i is None:
            return False
        self._unhash(i)
        self.cols["aversion"][i] = version
        self._rehash(i)
        return True

    def ephemerals(self, session: int) -> list[str]:
        rows = np.nonzero((self.cols["ephemeral_owner"][: self.n] == session) & self.alive[: self.n])[0]
        return [self.path_of(int(i)) for i in rows]

    # -- txns ------------------------------------------------------------------
    def apply(self, txn: Txn) -> None:
        st = self.stats
        st.applied += 1
        st.by_op[txn.op] = st.by_op.get(txn.op, 0) + 1
        self._txn = txn
        if txn.op == "multi":
            subs = txn.body["txns"]
            if any(t == -1 for t, _, _ in subs):
                return
            for _, op, body in subs:
                self._one(op, body, txn)
        else:
            self._one(txn.op, txn.body, txn)

    def _one(self, op: str, b: dict, txn: Txn) -> None:
        zxid, time = txn.zxid, txn.time
        if op in ("create", "create2"):
            owner = txn.client_id if b["ephemeral"] else 0
            ok = self.create(b["path"], b["data"], owner, b["parent_cversion"], zxid, time)
        elif op == "createContainer":
            ok = self.create(b["path"], b["data"], CONTAINER_OWNER, b["parent_cversion"], zxid, time)
        elif op == "createTTL":
            ok = self.create(b["path"], b["data"], TTL_BITS | b["ttl"], b["parent_cversion"], zxid, time)
        elif op in ("delete", "deleteContainer"):
            ok = self.delete(b["path"], zxid)
        elif op in ("setData", "reconfig"):
            ok = self.set_data(b["path"], b["data"], b["version"], zxid, time)
        elif op == "setACL":
            ok = self.set_acl(b["path"], b["version"])
        elif op == "closeSession":
            paths = list(b.get("paths_to_delete") or [])
            seen = set(paths)
            paths += [p for p in self.ephemerals(txn.client_id) if p not in seen]
            for path in paths:
                self.delete(path, zxid)
            ok = True
        else:  # createSession, check, error: no change to the tree
            ok = True
        if not ok:
            self.stats.ignored += 1

    # -- result ----------------------------------------------------------------
    def persisted(self) -> tuple[Spans | pa.Array, Spans | pa.Array, dict[str, np.ndarray] | StatRecords]:
        """The live nodes: (snapshot-form paths, data, persisted stat columns)."""
        n, nb = self.n, self.n_base
        if n == nb and not self.new_data and self.alive.all():  # nothing replayed: no copies
            return *self.spans, (self.records if self.records is not None else self.cols)
        alive = self.alive[:n]
        touched = np.zeros(n, np.bool_)
        if self.new_data:
            touched[np.fromiter(self.new_data.keys(), np.int64, len(self.new_data))] = True
        touched[nb:] = True
        keep_base = np.nonzero(alive[:nb] & ~touched[:nb])[0]
        keep_touched = np.nonzero(alive & touched)[0]
        paths = pa.concat_arrays([
            self.paths.take(pa.array(keep_base)),
            pa.array([self.path_of(int(i)).encode("utf-8", "surrogateescape") for i in keep_touched],
                     pa.large_binary()).view(pa.large_string()),
        ])
        data = pa.concat_arrays([
            self.data.take(pa.array(keep_base)),
            pa.array([self.data_of(int(i)) for i in keep_touched], pa.large_binary()),
        ])
        rows = np.concatenate([keep_base, keep_touched])
        cols = {name: col[:n][rows] for name, col in self.cols.items()}
        return paths, data, cols
