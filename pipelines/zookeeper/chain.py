"""The whole retained past of a data dir: the history (``raw/znode_changes``) starts at the
OLDEST snapshot from which an unbroken chain of txn logs reaches the published tree, not at
the snapshot the tree is read from.

ZooKeeper keeps several snapshots and every log from the oldest one on
(``autopurge.snapRetainCount``, default 3; a snapshot every ``snapCount`` txns or so). The tree
(``raw/znodes``) is read as ZooKeeper restores it, from the newest valid snapshot and the logs
after it (:mod:`pipelines.zookeeper.datadir`). The history is a replay of its own, over one tree:

- the candidates are the snapshots at or below the one the tree was read from, oldest first;
  the first that parses is replayed, every change recorded, through the logs up to the
  published zxid;
- the chain is checked on the way: each txn must follow the one before (zxid continuity,
  across logs too), txn digests are compared once the tree is exact, and each later
  snapshot's stored digest is compared when the replay reaches its zxid;
- at the end, the replayed tree's digest must equal the published tree's (both computed over
  every node, so this holds without stored digests too);
- where the chain is cut (a zxid gap, a digest mismatch, an unreadable snapshot, logs that do
  not lead to the published tree), a quarantine row says where and why, and the history starts
  again from the oldest snapshot past the cut. The snapshot the tree was read from is the last
  candidate: its replay is the tree's own.

A tree read without any snapshot (the logs onto the empty tree) recorded its changes itself:
they are the whole history.

Memory: one tree at a time besides the published one (an older snapshot is parsed only to
start from; the later ones are checked by the digest at the end of their file), the logs read
one at a time, the changes held as Arrow batches (:class:`~pipelines.zookeeper.history.ChangeLog`).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.warehouse import quarantine
from pipelines.zookeeper.datadir import QUARANTINE_SOURCE, OfflineRead, _read_from, list_files, read_dir
from pipelines.zookeeper.errors import ZkFormatError
from pipelines.zookeeper.history import ChangeLog, History
from pipelines.zookeeper.snapshot import parse, stored_digest


def read_dir_with_history(d: Path, at_zxid: int | None = None, progress=None) -> OfflineRead:
    """:func:`pipelines.zookeeper.datadir.read_dir`'s tree of the data dir ``d``, with its
    history (``res.history``) from the oldest snapshot the logs continue."""
    res = read_dir(d, at_zxid, progress)
    res.history = replay_history(res, list_files(d, "snapshot"), list_files(d, "log"), progress)
    return res


def replay_history(res: OfflineRead, snaps: list[tuple[int, Path]], logs: list[tuple[int, Path]],
                   progress=None) -> History | None:
    """The history of the data dir whose tree ``res`` is (see the module docstring); its cuts and
    the damage only its replay read are added to ``res.quarantine`` and ``res.warnings``."""
    if res.tree.history is not None:  # read from the empty tree: every txn is in the history already
        return _history(res, res, None, 0, 0)
    if res.snapshot is None:
        return None
    tree_snapshot = Path(res.snapshot)
    candidates = [(z, p) for z, p in snaps if z <= (res.snapshot_zxid or 0)]
    if tree_snapshot not in [p for _, p in candidates]:
        candidates.append((res.snapshot_zxid or 0, tree_snapshot))
    seen = {(q["location"], q["reason"]) for q in res.quarantine}
    cuts: list[tuple[str, str]] = []  # (location, why)
    floor = -1  # the lowest snapshot zxid a replay past the last cut may start from
    for k, (z, p) in enumerate(candidates):
        if z < floor:
            continue
        try:
            snap = parse(p, verify_digest=False)
        except ZkFormatError as err:
            cuts.append((err.location, f"snapshot {p.name} is unreadable: {err.reason}"))
            continue
        if snap.consistent_at_or_after > res.zxid:
            continue  # holds changes past the published tree (a target zxid before it)
        later = {}
        for z2, p2 in candidates[k + 1 :]:
            if z2 > z and p2 != tree_snapshot:
                d = _digest_of(p2)
                if d is not None and z < d.zxid <= res.zxid:
                    later[d.zxid] = (str(p2), d.digest)
        try:
            attempt = _read_from(snap, snaps, logs, res.zxid, progress, checkpoints=later)
        except ZkFormatError as err:  # its own digest does not match and no log follows it
            cuts.append((err.location, f"snapshot {p.name}: {err.reason}"))
            continue
        _merge(res, attempt, seen)
        why = _broken(attempt, res, p)
        if why is None:
            start = snap.holds_through if snap.holds_through is not None else z
            hist = _history(res, attempt, str(p), start, len(candidates) - k)
            for location, reason in cuts:
                reason = f"{reason}; the history (raw/znode_changes) starts after it, at {p.name}"
                hist.cuts.append(f"{location}: {reason}")
                res.quarantine.append(quarantine.row(QUARANTINE_SOURCE, location, reason))
                res.warnings.append(f"{location}: {reason}")
            return hist
        cuts.append(why)
        floor = attempt.cut[3] if attempt.cut is not None else z + 1
    res.warnings.append("no history: no snapshot, not even the tree's own, replays into the published tree")
    return None


def _digest_of(path: Path):
    try:
        return stored_digest(path)
    except (ZkFormatError, OSError):
        return None  # an unreadable later snapshot is not checked (the replay does not need it)


def _broken(attempt: OfflineRead, res: OfflineRead, start: Path) -> tuple[str, str] | None:
    """(location, why) the replay from ``start`` is no history of the published tree, or None."""
    if attempt.snapshot_failed is not None:
        err = attempt.snapshot_failed
        return err.location, f"snapshot {start.name}: {err.reason}; no digest in the logs matches it either"
    if attempt.cut is not None:
        _, location, why, _ = attempt.cut
        return location, why
    if attempt.zxid != res.zxid:
        if attempt.beyond is not None:
            zxid, location = attempt.beyond
            return location, (f"the logs from snapshot {start.name} go from zxid {attempt.zxid:#x} to {zxid:#x}, "
                              f"past the published tree's {res.zxid:#x}: they are not the chain to it")
        return str(start), f"the logs from snapshot {start.name} end at zxid {attempt.zxid:#x}, before {res.zxid:#x}"
    if attempt.tree.digest != res.tree.digest:
        return str(start), (f"the logs from snapshot {start.name} lead to another tree than the published one at "
                            f"zxid {res.zxid:#x} (tree digest {attempt.tree.digest}, published {res.tree.digest})")
    return None


def _merge(res: OfflineRead, attempt: OfflineRead, seen: set) -> None:
    """The damage rows of ``attempt`` the tree's own read did not have (its cut aside: a cut
    row of its own is written when the history's start is known)."""
    cut_at = attempt.cut[1] if attempt.cut is not None else None
    for q in attempt.quarantine:
        key = (q["location"], q["reason"])
        if key in seen or q["location"] == cut_at:
            continue
        seen.add(key)
        res.quarantine.append(q)
        res.warnings.append(f"{q['location']}: {q['reason']}")


def _history(res: OfflineRead, replay: OfflineRead, snapshot: str | None, start_zxid: int,
             snapshots: int) -> History:
    first, last = replay.first_txn, replay.tree._txn
    return History(replay.tree.history or ChangeLog(), snapshot, start_zxid, res.zxid, replay.txns_applied,
                   snapshots, len(replay.snapshots_checked), first.time if first is not None else None,
                   last.time if last is not None else None)
