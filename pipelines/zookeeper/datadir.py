"""Reading a ZooKeeper data dir offline, as ``FileTxnSnapLog.restore`` does: the newest
valid snapshot at or below the target zxid, then the logs after it.

- Snapshots are tried newest first (``FileSnap.findNValidSnapshots``); an unreadable one is
  quarantined and the next older one is tried. With a target zxid, a snapshot whose state is
  known to be past the target (its digest zxid, last processed zxid or any node zxid) is
  skipped: the fuzzy part cannot be undone.
- A snapshot whose tree digest does not match at its own zxid is not necessarily corrupt:
  ZooKeeper writes snapshots while it applies transactions, and one applied to the tree but
  not yet to the last processed zxid and digest when the snapshot ends leaves exactly that
  (ZooKeeper only logs it). With logs after it, the replay decides: the tree is verified by
  the first transaction digest that matches; none matching raises the mismatch. Without
  logs it is raised at once.
- Logs: the last one starting at or before the snapshot zxid and every later one
  (``FileTxnLog.getLogFiles``); txns up to the snapshot zxid (and repeats) are skipped.
- A partial entry ends its log (ZooKeeper moves on to the next log); a corrupt entry (CRC
  mismatch, undecodable) stops the replay there with a quarantine row and a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipelines.zookeeper.errors import DigestMismatch, ZkFormatError
from pipelines.zookeeper.replay import Tree
from pipelines.zookeeper.snapshot import (
    DIGEST_VERSION,
    Snapshot,
    check_digest,
    parse,
    zxid_of,
)
from pipelines.zookeeper.txnlog import LogReader

QUARANTINE_SOURCE = "zk-snapshot"


@dataclass
class OfflineRead:
    tree: Tree
    snapshot: str | None = None
    snapshot_zxid: int | None = None
    zxid: int = 0  # reached: the last txn applied, else the snapshot's zxid
    target: int | None = None
    digest_verified: bool | None = None
    logs: list[str] = field(default_factory=list)
    txns_applied: int = 0
    txn_digests_checked: int = 0
    txn_digest_mismatches: int = 0
    quarantine: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def quarantined(self, location: str, reason: str, raw: bytes | None = None) -> None:
        self.quarantine.append({"source": QUARANTINE_SOURCE, "location": location, "reason": reason, "raw": raw})


def resolve(path: Path) -> tuple[Path | None, Path | None]:
    """(single snapshot file, data dir) for a path given by the user."""
    if not path.exists():
        raise ZkFormatError(str(path), 0, "no such file or directory")
    if path.is_file():
        return path, None
    sub = path / "version-2"
    return None, (sub if sub.is_dir() else path)


def list_files(d: Path, prefix: str) -> list[tuple[int, Path]]:
    out = []
    for p in d.iterdir():
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
    res.zxid = snap.zxid if snap.zxid is not None else snap.consistent_at_or_after
    res.digest_verified = snap.digest_verified
    res.warnings += snap.notes
    return res


def read_dir(d: Path, at_zxid: int | None = None, progress=None) -> OfflineRead:
    snaps = list_files(d, "snapshot")
    logs = list_files(d, "log")
    chosen: Snapshot | None = None
    skipped: list[str] = []
    quarantine: list[tuple[str, str]] = []
    for z, p in reversed(snaps):
        if at_zxid is not None and z > at_zxid:
            continue
        try:
            snap = parse(p, verify_digest=False)
        except ZkFormatError as err:
            quarantine.append((err.location, err.reason))
            continue
        if at_zxid is not None and snap.consistent_at_or_after > at_zxid:
            skipped.append(f"{p.name} holds changes past zxid {at_zxid:#x}")
            continue
        chosen = snap
        break
    res = OfflineRead(Tree(chosen), target=at_zxid)
    for loc, reason in quarantine:
        res.quarantined(loc, reason)
        res.warnings.append(f"skipped corrupt snapshot {loc}: {reason}")
    res.warnings += [f"skipped {s}" for s in skipped]
    snap_zxid = 0
    if chosen is not None:
        res.snapshot, res.snapshot_zxid = chosen.file, chosen.zxid
        snap_zxid = chosen.zxid if chosen.zxid is not None else 0
    elif snaps:
        res.warnings.append("no usable snapshot: replaying the logs onto an empty tree")
    if chosen is None and logs and logs[0][0] > 1:
        res.warnings.append(f"the oldest log starts at zxid {logs[0][0]:#x}: changes before it are missing")
    res.zxid = snap_zxid
    chain = log_chain(logs, snap_zxid)
    suspect = _check_snapshot_digest(res, chosen, chain)
    _replay(res, chosen, chain, snap_zxid, at_zxid, progress)
    if suspect is not None:
        if res.txn_digests_checked == 0:
            raise suspect
        res.digest_verified = True
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
    return None


def _replay(res: OfflineRead, snap: Snapshot | None, chain: list[Path], snap_zxid: int, at_zxid, progress) -> None:
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
    for log in chain:
        reader = LogReader(log)
        used = False
        try:
            for txn in reader:
                if txn.zxid <= last:
                    continue
                if at_zxid is not None and txn.zxid > at_zxid:
                    _finish(res, log, used)
                    return
                tree.apply(txn)
                used = True
                last = txn.zxid
                res.zxid = last
                res.txns_applied += 1
                if progress is not None:
                    progress(1)
                if pending is not None and txn.zxid >= pending.zxid:
                    if txn.zxid == pending.zxid:
                        if tree.digest != pending.digest:
                            raise DigestMismatch(
                                snap.file, 0,
                                f"tree digest mismatch at zxid {pending.zxid:#x} after replaying the logs: "
                                f"stored {pending.digest}, computed {tree.digest}",
                            )
                        res.digest_verified = True
                        exact = True
                    else:
                        res.warnings.append(f"zxid {pending.zxid:#x} of the snapshot digest is not in the logs")
                    pending = None
                if txn.digest is not None and txn.digest[0] == DIGEST_VERSION:
                    if tree.digest == txn.digest[1]:
                        res.txn_digests_checked += 1
                        exact = True
                    elif exact:
                        res.txn_digest_mismatches += 1
                        if res.txn_digest_mismatches == 1:
                            reason = (f"tree digest after txn {txn.zxid:#x} ({txn.op}) is {tree.digest}, "
                                      f"the log says {txn.digest[1]}")
                            res.quarantined(f"{txn.file}:{txn.offset}", reason)
                            res.warnings.append(f"{txn.file}:{txn.offset}: {reason}")
        except ZkFormatError as err:  # an unreadable log header: stop here
            res.quarantined(err.location, err.reason)
            res.warnings.append(f"replay stopped: {err}")
            _finish(res, log, used)
            return
        _finish(res, log, used)
        end = reader.end
        if end is not None and end.kind == "corrupt":
            loc = f"{log}:{end.offset}"
            res.quarantined(loc, end.reason, end.raw)
            res.warnings.append(f"replay stopped at {loc}: {end.reason}")
            return
        if end is not None and end.kind == "partial":
            res.warnings.append(f"{log}:{end.offset}: {end.reason}; the log ends there")
    if pending is not None:
        res.warnings.append(f"snapshot digest of zxid {pending.zxid:#x} not verified: the logs end before it")
    if at_zxid is not None and res.zxid < at_zxid:
        res.warnings.append(f"the logs end at zxid {res.zxid:#x}, before the target {at_zxid:#x}")


def _finish(res: OfflineRead, log: Path, used: bool) -> None:
    if used and str(log) not in res.logs:
        res.logs.append(str(log))
