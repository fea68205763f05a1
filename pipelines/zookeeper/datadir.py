"""Reading a ZooKeeper data dir offline, as ``FileTxnSnapLog.restore`` does: the newest
valid snapshot at or below the target zxid, then the logs after it.

- Snapshots are tried newest first (``FileSnap.findNValidSnapshots``); an unreadable one is
  quarantined and the next older one is tried. With a target zxid, a snapshot whose state is
  known to be past the target (its digest zxid, last processed zxid or any node zxid) is
  skipped: the fuzzy part cannot be undone.
- A snapshot whose tree digest does not match at its own zxid (or, for a fuzzy snapshot, at the
  digest's later zxid once the replay reaches it) is not necessarily corrupt: ZooKeeper writes
  snapshots while it applies transactions, and one applied to the tree but not yet to the last
  processed zxid and digest when the snapshot ends leaves exactly that (ZooKeeper only logs
  it). With logs after it, the replay decides: the tree is verified by the first transaction
  digest that matches; none matching raises the mismatch. Without logs it is raised at once.
  One whose digest matches is exactly the tree at the digest's zxid, however far past its name
  the writing ended: the replay starts after that zxid (the txns in between are in the tree
  already, and their digests describe older trees).
- Logs: the last one starting at or before the snapshot zxid and every later one
  (``FileTxnLog.getLogFiles``); txns up to the snapshot zxid (and repeats) are skipped, not
  decoded (``LogReader.skip_through``), and damage among them does not stop the replay (it is
  quarantined): only the txns after the snapshot are needed.
- Every txn applied must follow the one before (zxid + 1, or the first of a later epoch):
  a missing txn (a zxid gap) stops the replay there, with a quarantine row naming it.
- Damage in a log (see :mod:`pipelines.zookeeper.txnlog`) is quarantined and reading resumes
  at the next valid txn, which the gap rule then admits or not; a partial last txn is
  quarantined too (ZooKeeper drops it as well). Nothing stops silently.
- Digests: the tree is verified at a zxid when its digest matches the snapshot's or a txn's.
  A mismatch once the tree was exact (or a gap, or damage ending the logs) makes the read
  unverified (``digest_verified`` False, ``unverified`` says why) and the tree is published as
  of the last verified zxid (the replay is run again up to it). A snapshot that no digest
  ever verifies is set aside for the next older one; with none older, its mismatch is raised
  (or, when a gap or damage prevented the check, the read is published unverified).
- History: the tree above is the newest state; its changes (``raw/znode_changes``) are replayed
  from further back, the oldest snapshot from which the logs reach that tree unbroken
  (:mod:`pipelines.zookeeper.chain`), and kept in :attr:`OfflineRead.history`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.errors import InputError
from pipelines.warehouse import quarantine
from pipelines.zookeeper.errors import DigestMismatch, ZkFormatError
from pipelines.zookeeper.replay import Tree
from pipelines.zookeeper.snapshot import (
    DIGEST_VERSION,
    Snapshot,
    check_digest,
    parse,
    zxid_of,
)
from pipelines.zookeeper.txnlog import Damage, LogReader

if TYPE_CHECKING:
    from pipelines.zookeeper.history import History

QUARANTINE_SOURCE = "zk-snapshot"


@dataclass
class OfflineRead:
    tree: Tree
    snapshot: str | None = None
    snapshot_zxid: int | None = None
    zxid: int = 0  # reached: the last txn applied, else the snapshot's zxid
    target: int | None = None
    digest_verified: bool | None = None
    verified_zxid: int | None = None  # the last zxid at which a stored digest matched the tree
    unverified: str | None = None  # why the read is not verified: a gap, a mismatch, damage
    logs: list[str] = field(default_factory=list)
    txns_applied: int = 0
    txn_digests_checked: int = 0
    txn_digest_mismatches: int = 0
    first_txn: object | None = None  # the first txn applied (its zxid and time start the history)
    snapshots_checked: list[str] = field(default_factory=list)  # later snapshots whose digest the replay matched
    snapshot_failed: DigestMismatch | None = None  # digests were there to check it, none matched
    pending_failed: DigestMismatch | None = None  # a fuzzy snapshot's digest did not match at its zxid
    digests_seen: bool = False  # the logs hold txn digests
    quarantine: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # where the replay broke off (a gap, a digest mismatch): (zxid of the first txn not applied,
    # its file:byte, why, the lowest snapshot zxid a replay past it may start from)
    cut: tuple[int, str, str, int] | None = None
    beyond: tuple[int, str] | None = None  # the txn past the target the replay stopped at: zxid, file:byte
    history: History | None = None  # from the oldest snapshot the logs continue (chain.read_dir_with_history)

    def quarantined(self, location: str, reason: str, raw: bytes | None = None) -> None:
        self.quarantine.append(quarantine.row(QUARANTINE_SOURCE, location, reason, raw))


EXPECTED = "expected a data dir, its version-2/ or a snapshot file"
NO_MATCH = "no stored digest matches the tree: the snapshot or the logs are wrong"


def resolve(path: Path) -> tuple[Path | None, Path | None]:
    """(single snapshot file, data dir) for a path given by the user; a path that holds no
    snapshot nor log file is an :class:`InputError`."""
    if not path.exists():
        raise ZkFormatError(str(path), 0, "no such file or directory")
    if path.is_file():
        return path, None
    if not path.is_dir():
        raise InputError(f"{path}: not a file nor a directory ({EXPECTED})")
    sub = path / "version-2"
    d = sub if sub.is_dir() else path
    if not list_files(d, "snapshot") and not list_files(d, "log"):
        raise InputError(f"{path}: no ZooKeeper snapshot.* or log.* files ({EXPECTED})")
    return None, d


def list_files(d: Path, prefix: str) -> list[tuple[int, Path]]:
    out = []
    try:
        entries = list(d.iterdir())
    except OSError as err:
        raise InputError(f"{d}: cannot list: {err.strerror or err}") from None
    for p in entries:
        z = zxid_of(p.name, prefix)
        if z is not None and p.is_file():
            out.append((z, p))
    return sorted(out, key=lambda t: (t[0], t[1].name))


def log_chain(logs: list[tuple[int, Path]], snap_zxid: int) -> list[Path]:
    start = 0
    for z, _ in logs:
        if z > snap_zxid:
            break
        start = max(start, z)
    return [p for z, p in logs if z >= start]


def read_file(path: Path) -> OfflineRead:
    """One snapshot file, no logs: unreadable is an error."""
    snap = parse(path)
    res = OfflineRead(Tree(snap), snapshot=str(path), snapshot_zxid=snap.zxid)
    res.zxid = snap.holds_through if snap.holds_through is not None else snap.consistent_at_or_after
    res.digest_verified = snap.digest_verified
    res.warnings += snap.notes
    return res


def read_dir(d: Path, at_zxid: int | None = None, progress=None) -> OfflineRead:
    snaps = list_files(d, "snapshot")
    logs = list_files(d, "log")
    rejected: list[tuple[str, str]] = []  # snapshots not used: (location, reason)
    skipped: list[str] = []
    candidates = [(z, p) for z, p in reversed(snaps) if at_zxid is None or z <= at_zxid]
    while True:
        chosen = None
        while candidates:
            _, p = candidates.pop(0)
            try:
                snap = parse(p, verify_digest=False)
            except ZkFormatError as err:
                rejected.append((err.location, err.reason))
                continue
            if at_zxid is not None and snap.consistent_at_or_after > at_zxid:
                skipped.append(f"{p.name} holds changes past zxid {at_zxid:#x}")
                continue
            chosen = snap
            break
        res = _read_from(chosen, snaps, logs, at_zxid, progress, history=chosen is None)
        if candidates and res.snapshot_failed is not None:
            err = res.snapshot_failed
            rejected.append((err.location, f"{err.reason}; no digest in the logs matches it either"))
            continue
        if candidates and chosen is not None and res.unverified and res.verified_zxid is None:
            skipped.append(f"{Path(chosen.file).name}: no digest verified it ({res.unverified}); trying an older one")
            continue
        break
    if res.snapshot_failed is not None and res.unverified is None:
        raise res.snapshot_failed
    if res.verified_zxid is None and chosen is None and res.digests_seen and res.unverified:
        res.verified_zxid = 0  # an empty start is exact: what the first txn digest then failed
    if res.unverified and res.verified_zxid is not None and res.verified_zxid < res.zxid:
        # publish the tree as of the last verified zxid: replay again up to it
        again = _read_from(chosen, snaps, logs, res.verified_zxid, None, history=chosen is None)
        again.quarantine, again.warnings = res.quarantine, res.warnings
        again.txn_digest_mismatches, again.unverified = res.txn_digest_mismatches, res.unverified
        again.warnings.append(f"published as of zxid {again.zxid:#x}, the last zxid verified by a digest "
                              f"(the logs were read up to {res.zxid:#x})")
        again.target = at_zxid
        res = again
    if res.unverified:
        res.digest_verified = False
    elif res.verified_zxid is not None:
        res.digest_verified = True
    for loc, reason in reversed(rejected):
        res.quarantine.insert(0, quarantine.row(QUARANTINE_SOURCE, loc, reason))
    res.warnings[:0] = [f"skipped corrupt snapshot {loc}: {reason}" for loc, reason in rejected]
    res.warnings += [f"skipped {s}" for s in skipped]
    if chosen is None and res.txns_applied == 0:
        why = "; ".join(f"{q['location']}: {q['reason']}" for q in res.quarantine[:2])
        raise InputError(f"{d}: no readable ZooKeeper snapshot nor transaction log to start from ({why or EXPECTED})")
    return res


def _read_from(chosen: Snapshot | None, snaps, logs, at_zxid: int | None, progress, *, history: bool = True,
               checkpoints: dict | None = None) -> OfflineRead:
    """The tree of ``chosen`` (None: the empty tree) with the logs after it replayed up to
    ``at_zxid``; the changes are recorded (``tree.history``) when ``history``;
    ``checkpoints`` (zxid -> (snapshot file, stored tree digest)): the digests of later
    snapshots, compared when the replay reaches their zxid."""
    res = OfflineRead(Tree(chosen), target=at_zxid)
    snap_zxid = 0
    if chosen is not None:
        res.snapshot, res.snapshot_zxid = chosen.file, chosen.zxid
        snap_zxid = chosen.zxid if chosen.zxid is not None else 0
    elif snaps:
        res.warnings.append("no usable snapshot: replaying the logs onto an empty tree")
    chain = log_chain(logs, snap_zxid)
    suspect = _check_snapshot_digest(res, chosen, chain)
    if chosen is not None and chosen.holds_through is not None:
        snap_zxid = chosen.holds_through  # a verified fuzzy snapshot: its window is not replayed
    res.zxid = snap_zxid
    if chain and history:
        res.tree.keep_history(snap_zxid)
    _replay(res, chosen, chain, snap_zxid, at_zxid, progress, checkpoints or {})
    suspect = suspect or res.pending_failed
    if suspect is not None and res.verified_zxid is None:
        res.snapshot_failed = suspect
        if res.unverified == NO_MATCH:  # the snapshot's own mismatch says it better
            res.unverified = None
    return res


def _check_snapshot_digest(res: OfflineRead, snap: Snapshot | None, chain: list[Path]) -> DigestMismatch | None:
    """The chosen snapshot's digest check; a mismatch with logs to replay after it is returned
    (for the replay to decide, see the module docstring) instead of raised."""
    if snap is None:
        return None
    try:
        check_digest(snap)
    except DigestMismatch as err:
        if not chain:
            raise
        res.warnings.append(f"{err}; a transaction in flight while ZooKeeper wrote it leaves that: the logs decide")
        return err
    res.digest_verified = snap.digest_verified
    if snap.digest_verified:
        res.verified_zxid = snap.digest.zxid
    return None


def follows(last: int, zxid: int) -> bool:
    """Whether ``zxid`` may come right after ``last``: the next counter, or a later epoch
    (a new leader starts its epoch's counter afresh)."""
    return zxid == last + 1 or zxid >> 32 > last >> 32


def _replay(res: OfflineRead, snap: Snapshot | None, chain: list[Path], snap_zxid: int, at_zxid, progress,
            checkpoints: dict) -> None:
    tree = res.tree
    pending = None  # a fuzzy snapshot's digest, checked when the replay reaches its zxid
    if snap is not None and snap.digest is not None and snap.digest_verified is None:
        d = snap.digest
        if d.version == DIGEST_VERSION and d.zxid > snap_zxid:
            pending = d
    # TxnDigests are compared once the tree is known to be exact: an empty start, a verified
    # snapshot digest, or the first txn digest that matches (end of the fuzzy window).
    exact = snap is None or snap.digest_verified is True
    last = snap_zxid
    for n, log in enumerate(chain):
        reader = LogReader(log, skip_through=last)  # those are neither decoded nor yielded
        used = False
        try:
            for txn in reader:
                if isinstance(txn, Damage):
                    _damaged(res, f"{txn.file}:{txn.offset}", txn.reason, txn.raw)
                    continue
                if txn.zxid <= last:
                    continue
                if at_zxid is not None and txn.zxid > at_zxid:
                    res.beyond = (txn.zxid, f"{txn.file}:{txn.offset}")
                    _finish(res, log, used)
                    return
                if not follows(last, txn.zxid):
                    reason = f"zxid gap: expected {last + 1:#x}, found {txn.zxid:#x}"
                    _damaged(res, f"{txn.file}:{txn.offset}", f"{reason}; the replay stops at {last:#x}")
                    res.unverified = f"{reason} ({txn.file}:{txn.offset})"
                    res.cut = (txn.zxid, f"{txn.file}:{txn.offset}", reason, txn.zxid - 1)
                    _finish(res, log, used)
                    return
                tree.apply(txn)
                used = True
                last = reader.skip_through = txn.zxid
                res.zxid = last
                res.txns_applied += 1
                if res.txns_applied == 1:
                    res.first_txn = txn
                if progress is not None:
                    progress(1)
                if pending is not None and txn.zxid >= pending.zxid:
                    if txn.zxid == pending.zxid:
                        if tree.digest != pending.digest:  # the next txn digest that matches decides
                            res.pending_failed = DigestMismatch(
                                snap.file, 0,
                                f"tree digest mismatch at zxid {pending.zxid:#x} after replaying the logs: "
                                f"stored {pending.digest}, computed {tree.digest}",
                            )
                        else:
                            res.verified_zxid = txn.zxid
                            exact = True
                    else:
                        res.warnings.append(f"zxid {pending.zxid:#x} of the snapshot digest is not in the logs")
                    pending = None
                if txn.digest is not None and txn.digest[0] == DIGEST_VERSION:
                    res.digests_seen = True
                    if tree.digest == txn.digest[1]:
                        res.txn_digests_checked += 1
                        res.verified_zxid = txn.zxid
                        exact = True
                    elif exact:
                        res.txn_digest_mismatches += 1
                        reason = (f"tree digest after txn {txn.zxid:#x} ({txn.op}) is {tree.digest}, "
                                  f"the log says {txn.digest[1]}")
                        _damaged(res, f"{txn.file}:{txn.offset}", reason)
                        res.unverified = f"{reason} ({txn.file}:{txn.offset})"
                        res.cut = (txn.zxid, f"{txn.file}:{txn.offset}", reason, txn.zxid)
                        _finish(res, log, used)
                        return
                if checkpoints and txn.zxid in checkpoints and not _checkpoint(res, txn, checkpoints, exact):
                    _finish(res, log, used)
                    return
        except ZkFormatError as err:  # an unreadable log header: the next log may still follow on
            _damaged(res, err.location, err.reason)
            if n == len(chain) - 1:
                res.unverified = f"the last log is unreadable, txns after {last:#x} may be lost ({err})"
        _finish(res, log, used)
        end = reader.end
        if end is not None and end.kind in ("corrupt", "partial"):
            loc = f"{log}:{end.offset}"
            _damaged(res, loc, end.reason + ("; the log ends there" if end.kind == "partial" else ""), end.raw)
            if end.kind == "corrupt" and n == len(chain) - 1:
                res.unverified = f"the replay stopped at damage, txns after {last:#x} may be lost ({loc}: {end.reason})"
    if pending is not None:
        res.warnings.append(f"snapshot digest of zxid {pending.zxid:#x} not verified: the logs end before it")
    if at_zxid is not None and res.zxid < at_zxid:
        res.warnings.append(f"the logs end at zxid {res.zxid:#x}, before the target {at_zxid:#x}")
    if res.verified_zxid is None and res.digests_seen and snap is not None and res.unverified is None:
        res.unverified = NO_MATCH


def _checkpoint(res: OfflineRead, txn, checkpoints: dict, exact: bool) -> bool:
    """Compare the tree with the stored digest of a later snapshot at its zxid; False when the
    replay cannot go on: they differ and no digest has shown the tree exact (were it exact, the
    snapshot is what is off: quarantined, the replay goes on)."""
    file, digest = checkpoints[txn.zxid]
    if res.tree.digest == digest:
        res.snapshots_checked.append(file)
        return True
    reason = (f"{file}: its stored tree digest of zxid {txn.zxid:#x} is {digest}, the tree the logs give there "
              f"is {res.tree.digest}")
    if exact:
        _damaged(res, f"{file}:0", reason + " (the txn digests verify the logs' tree)")
        return True
    res.unverified = reason
    res.cut = (txn.zxid, f"{file}:0", reason, txn.zxid)
    return False


def _damaged(res: OfflineRead, location: str, reason: str, raw: bytes | None = None) -> None:
    res.quarantined(location, reason, raw)
    res.warnings.append(f"{location}: {reason}")


def _finish(res: OfflineRead, log: Path, used: bool) -> None:
    if used and str(log) not in res.logs:
        res.logs.append(str(log))
