"""Write-audit-publish of a step's tables on an Iceberg warehouse.

A step writes each of its tables on a branch of its own, ``kaudit_<run>_<step>``, created from
the table's ``main`` at the step's first write of it: an engine that reads a table's current
state (``main``: Spark SQL without ``VERSION AS OF``, the Thrift Server, pyiceberg's or DuckDB's
``table.scan()``) does not see it. When the step ends without error it is published, under one
lock per warehouse (``<root>/.locks/publish.lock``, ``flock``: a killed holder's lock is freed by
the kernel):

1. *roll forward* what a killed publisher left (below): ``main`` of a table moves only here;
2. *rebase*: a table whose ``main`` is no longer an ancestor of the step's snapshot (another
   step published it meanwhile) gets the step's branch put on top of ``main``: one commit on
   the branch deletes the step's partition and adds the data files the step's snapshot has in
   it (no data rewritten), so the branch's head is ``main`` plus the step's partition;
3. *mark*: ``<root>/.publishing/<run>.<step>.json`` names each table's snapshot;
4. *record*: one append to the ledger ``meta.commits`` names the same snapshots: the step's
   single point of publication, for kaudit's readers (they read at the ledger's snapshots);
5. *fast-forward* each table's ``main`` to the step's snapshot and remove the branch, one
   metadata commit per table (``main`` conditioned on its current snapshot);
6. remove the mark.

A ``kill -9`` at any moment:

- before 4 (writing, rebasing, marking): no ledger row names the step's snapshots and no
  ``main`` moved: readers by the ledger and by ``main`` see the previous state. The re-run of
  the step (under its step lock) removes the branches its mark names (while writing, the mark
  lists the tables as their branches are created), as does the next publication of any step
  once the step's lock is free;
- between 4 and the last fast-forward of 5: the ledger names every table's new snapshot;
  ``main`` of the tables already fast-forwarded is at it, the others at their previous
  snapshot. An engine reading ``main`` in that window sees some tables of the step new and
  others old, each one a state a ledger row names (the new row, or the row of the step that
  published it before); never a table half written. The next kaudit step that starts or
  publishes (any run's) finds the mark, sees the ledger rows name its snapshots, and
  completes 5 and 6: roll forward. A mark whose snapshots no ledger row names (killed
  between 3 and 4) is rolled back: its branches removed, ``main`` untouched.

Since ``main`` moves only under the lock and after the roll-forward, the snapshot the ledger
names for a table is ``main`` at the moment of publication plus the step's partition; a later
step's snapshot of a table therefore holds every partition published before it (the reader of
a table two steps of a run share reads the newest one).
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import random
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipelines.warehouse.iceberg import partition_commit

PREFIX = "kaudit_"  # every branch kaudit writes starts so
MAIN = "main"
PENDING = ".publishing"  # the marks, in the warehouse's local directory
LOCK = "publish.lock"  # in the step locks' directory
TRIES = 8  # a commit that lost a race with another writer of the same table is retried
# every table's: kaudit rebuilds a transaction that lost a race itself (:func:`commit`); the
# metadata files of all but the last 100 commits are deleted (Iceberg's default keeps them all)
TABLE_PROPERTIES = {"write.parquet.compression-codec": "zstd", "commit.retry.num-retries": "0",
                    "write.metadata.delete-after-commit.enabled": "true"}
# Iceberg's table properties of snapshot retention, with Iceberg's defaults (:func:`stage_expiry`)
MAX_SNAPSHOT_AGE = ("history.expire.max-snapshot-age-ms", 5 * 24 * 3600 * 1000)
MIN_SNAPSHOTS = ("history.expire.min-snapshots-to-keep", 1)
_NOTING = threading.Lock()  # one thread at a time reads and writes a step's mark


def branch(run_id: str, step: str) -> str:
    """The branch step ``step`` of run ``run_id`` writes its tables on (``run_id`` and ``step``
    are letters, digits, ``-`` and ``_``: a Spark identifier part once back-quoted)."""
    return f"{PREFIX}{run_id}_{step}"


# -- the marks -------------------------------------------------------------------------------
def _mark_path(root: Path, run_id: str, step: str) -> Path:
    return Path(root) / PENDING / f"{run_id}.{step}.json"


def read_mark(root: Path, run_id: str, step: str) -> dict | None:
    try:
        return json.loads(_mark_path(root, run_id, step).read_text())
    except FileNotFoundError:
        return None
    except ValueError:  # torn by a crash while written: nothing published from it
        return {"run_id": run_id, "step": step, "tables": [], "published": None}


def _write_mark(root: Path, mark: dict) -> None:
    """The mark, whole or not at all (a temporary file renamed over it, synced first)."""
    path = _mark_path(root, mark["run_id"], mark["step"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(mark, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _drop_mark(root: Path, run_id: str, step: str) -> None:
    _mark_path(root, run_id, step).unlink(missing_ok=True)


def _marks(root: Path) -> list[tuple[str, str]]:
    pending = Path(root) / PENDING
    if not pending.is_dir():
        return []
    out = []
    for path in sorted(pending.glob("*.json")):
        run_id, _, step = path.name[:-len(".json")].partition(".")
        out.append((run_id, step))
    return out


@contextmanager
def publish_lock(root: Path, name: str = LOCK) -> Iterator[None]:
    """The warehouse's lock ``name`` (the publication's, or another one of the whole warehouse),
    held by one thread of one process on this host at a time: a killed holder's is freed by the kernel."""
    from pipelines.warehouse.locks import LOCKS

    path = Path(root) / LOCKS / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# -- the branches ----------------------------------------------------------------------------
def retry(attempt: int, err: Exception) -> None:
    """Waits before the next try of a commit that lost a race; ``err`` again after the last."""
    if attempt == TRIES - 1:
        raise err
    time.sleep(0.05 * (attempt + 1) * (1 + random.random()))  # (apart: writers that collided)


def transaction(ice):
    """A transaction on pyiceberg table ``ice`` (``ice.transaction()``) that applies the updates
    staged in it once per change rather than at every read of its metadata: pyiceberg 0.12's
    ``Transaction.table_metadata`` applies them all to a deep copy of the table's metadata each
    time, and a snapshot's producer reads it about twenty times (a third of a table commit's
    CPU). The metadata is a frozen model: the one object serves every reader until the next
    change is staged."""
    return _transaction_class()(ice)


@functools.cache
def _transaction_class():
    from pyiceberg.table import Transaction

    class StagedOnce(Transaction):
        @property
        def table_metadata(self):
            staged = getattr(self, "_staged", None)
            if staged is None or staged[0] is not self._table.metadata or staged[1] is not self._updates:
                staged = self._staged = (self._table.metadata, self._updates, super().table_metadata)
            return staged[2]

    return StagedOnce


def commit(txn):
    """``txn.commit_transaction()``; a commit that lost a race raises ``CommitFailedException``,
    for the caller to build its transaction again on the table as it is now (:func:`retry`).

    pyiceberg's SQL catalog applies a commit's updates to the table as it finds it when the
    commit reaches it, and checks only the requirements the updates carry (a branch's head, not
    the table's last sequence number): a snapshot staged on an older state of a table that
    another writer committed to meanwhile fails there with a ``ValueError`` on its sequence
    number, nothing committed. (pyiceberg's own retry, which rebuilds only the snapshots and
    drops the step's branch with its other ref updates, is off: :data:`TABLE_PROPERTIES`.)"""
    from pyiceberg.exceptions import CommitFailedException

    try:
        return txn.commit_transaction()
    except ValueError as err:
        if "sequence number" not in str(err):
            raise
        raise CommitFailedException(str(err)) from err


def stage_expiry(txn) -> None:
    """Stages in ``txn`` the expiry of the table's snapshots older than its
    ``history.expire.max-snapshot-age-ms`` (5 days unless set), but for its newest
    ``history.expire.min-snapshots-to-keep`` (1) and every branch's head (a step in flight).

    Without it every step's commit carries all the snapshots the table ever had: pyiceberg copies
    the whole metadata for each change it stages, and a step's cost grew with the warehouse's
    history (3 tables and the ledger: 1.68 s a step at first, 4.94 s after 150 runs). A run's
    rows stay readable after its snapshot expired: each later snapshot holds the partitions
    published before it (``Warehouse.snapshot_id`` reads ``main`` then). Only the metadata goes:
    the files of expired snapshots stay until ``remove_orphan_files`` (docs/warehouse.md)."""
    from pyiceberg.table.update import RemoveSnapshotsUpdate

    meta = txn.table_metadata
    props = meta.properties
    cutoff = int(time.time() * 1000) - int(props.get(MAX_SNAPSHOT_AGE[0], MAX_SNAPSHOT_AGE[1]))
    keep = int(props.get(MIN_SNAPSHOTS[0], MIN_SNAPSHOTS[1]))
    newest = sorted(meta.snapshots, key=lambda s: s.timestamp_ms)[-keep:] if keep > 0 else []
    kept = {ref.snapshot_id for ref in meta.refs.values()} | {s.snapshot_id for s in newest}
    old = [s.snapshot_id for s in meta.snapshots if s.timestamp_ms < cutoff and s.snapshot_id not in kept]
    if old:
        txn._stage((RemoveSnapshotsUpdate(snapshot_ids=old),))


def note(wh, table: str, run_id: str, step: str) -> str:
    """The step's branch name, its ``table`` noted in the step's mark first (before the branch
    is created: a kill right after leaves it findable). A Spark step writes its tables from
    several threads: one at a time notes its table."""
    with _NOTING:
        mark = read_mark(wh.root, run_id, step) or {"run_id": run_id, "step": step, "tables": [], "published": None}
        if table not in mark["tables"]:
            mark["tables"].append(table)
            _write_mark(wh.root, mark)
    return branch(run_id, step)


def stage_branch(txn, name: str) -> None:
    """Stages in transaction ``txn`` branch ``name`` at ``main``'s snapshot (created, or reset
    when a killed attempt left it). A table without a snapshot (just created) gets an empty one
    on ``main`` first: Iceberg writes to a branch only from a snapshot."""
    from pyiceberg.table.refs import SnapshotRefType

    if txn.table_metadata.snapshot_by_name(MAIN) is None:
        with txn.update_snapshot().fast_append():
            pass
    meta = txn.table_metadata
    main, ref = meta.snapshot_by_name(MAIN), meta.refs.get(name)
    if ref is None or ref.snapshot_id != main.snapshot_id:
        txn._stage(*txn._set_ref_snapshot(main.snapshot_id, name, SnapshotRefType.BRANCH))


def open_branch(wh, table: str, run_id: str, step: str, declared=None) -> str:
    """The step's branch of ``table`` at ``main``'s snapshot (:func:`stage_branch`), committed
    for a writer that commits to it by itself (Spark's write to a branch needs the branch)."""
    from pyiceberg.exceptions import CommitFailedException

    name = note(wh, table, run_id, step)
    for attempt in range(TRIES):
        txn = transaction(wh.table(table, declared))
        stage_branch(txn, name)
        try:
            commit(txn)
            return name
        except CommitFailedException as err:
            retry(attempt, err)
    raise AssertionError("unreachable")


def head(wh, table: str, name: str) -> int:
    """The snapshot the head of branch ``name`` of ``table`` is at."""
    return wh.catalog.load_table(wh.ident(table)).metadata.refs[name].snapshot_id


def _contains(ice, snapshot_id: int) -> bool:
    """``main`` of ``ice`` is ``snapshot_id`` or one of its ancestors (a fast-forward to it loses nothing)."""
    from pyiceberg.table.snapshots import ancestors_of

    main = ice.metadata.snapshot_by_name(MAIN)
    if main is None:
        return True
    return any(s.snapshot_id == main.snapshot_id for s in ancestors_of(ice.snapshot_by_id(snapshot_id), ice.metadata))


def rebase(wh, table: str, name: str, snapshot_id: int, partition: dict[str, str]) -> int:
    """``snapshot_id`` when ``main`` of ``table`` is one of its ancestors; else the step's
    branch ``name`` is reset to ``main`` and, in the same commit, its partition deleted and the
    data files ``snapshot_id`` holds in it added (the rows left, rewritten, where rows were
    deleted by position): the new head, ``main`` plus the step's partition."""
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table.refs import SnapshotRefType

    where = partition_commit.partition_filter(partition)
    for attempt in range(TRIES):
        ice = wh.catalog.load_table(wh.ident(table))
        if _contains(ice, snapshot_id):
            return snapshot_id
        scan = ice.scan(row_filter=where, snapshot_id=snapshot_id)
        tasks = list(scan.plan_files())
        txn = transaction(ice)
        txn._stage(*txn._set_ref_snapshot(ice.metadata.snapshot_by_name(MAIN).snapshot_id, name,
                                          SnapshotRefType.BRANCH))
        with warnings.catch_warnings():  # "did not match any records": main has no such partition
            warnings.simplefilter("ignore", UserWarning)
            txn.delete(where, branch=name)
        if any(task.delete_files for task in tasks):
            txn.append(scan.to_arrow(), branch=name)
        elif tasks:
            with txn.update_snapshot(branch=name).fast_append() as add:
                for task in tasks:
                    add.append_data_file(task.file)
        try:
            return commit(txn).metadata.refs[name].snapshot_id
        except CommitFailedException as err:
            retry(attempt, err)
    raise AssertionError("unreachable")


def fast_forward(wh, table: str, name: str, snapshot_id: int, partition: dict[str, str]) -> None:
    """``main`` of ``table`` moved to ``snapshot_id`` and branch ``name`` removed, in one commit
    that also expires old snapshots (:func:`stage_expiry`). A ``main`` that moved past it outside
    kaudit's publication (another engine's commit) gets the step's partition put on top of it
    instead (:func:`rebase`)."""
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table.update.snapshot import ManageSnapshots

    for attempt in range(TRIES):
        ice = wh.catalog.load_table(wh.ident(table))
        main = ice.metadata.snapshot_by_name(MAIN)
        if main is None or main.snapshot_id != snapshot_id:
            if not _contains(ice, snapshot_id):
                snapshot_id = rebase(wh, table, name, snapshot_id, partition)
                continue
        if name not in ice.metadata.refs and main is not None and main.snapshot_id == snapshot_id:
            return
        txn = transaction(ice)
        ms = ManageSnapshots(txn)
        if main is None or main.snapshot_id != snapshot_id:
            ms = ms.set_current_snapshot(snapshot_id=snapshot_id)
        if name in ice.metadata.refs:
            ms = ms.remove_branch(name)
        ms.commit()  # (staged in txn)
        stage_expiry(txn)
        try:
            commit(txn)
            return
        except CommitFailedException as err:
            retry(attempt, err)


def drop_branch(wh, table: str, name: str) -> None:
    """Removes branch ``name`` of ``table`` (nothing when it has none); ``main`` untouched."""
    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError

    for attempt in range(TRIES):
        try:
            ice = wh.catalog.load_table(wh.ident(table))
        except NoSuchTableError:
            return
        if name not in ice.metadata.refs:
            return
        try:
            ice.manage_snapshots().remove_branch(name).commit()
            return
        except CommitFailedException as err:
            retry(attempt, err)


# -- publication -----------------------------------------------------------------------------
Committed = list[tuple[str, int | None, int]]  # (table, snapshot, rows)


def publish(wh, run_id: str, step: str, committed: Committed) -> Committed:
    """Publishes the step's tables (``(table, snapshot on the step's branch, rows)``): rebase,
    mark, ledger row, fast-forward, as the module says; the rows the ledger got."""
    name = branch(run_id, step)
    with publish_lock(wh.root):
        roll_forward(wh)
        final = [(table, None if sid is None else rebase(wh, table, name, sid, wh.partition(table, run_id, step)),
                  rows) for table, sid, rows in committed]
        mark = read_mark(wh.root, run_id, step) or {"run_id": run_id, "step": step, "tables": []}
        mark["published"] = {table: sid for table, sid, _ in final if sid is not None}
        _write_mark(wh.root, mark)
        wh.record(run_id, step, final)
        _complete(wh, run_id, step, mark)
    return final


def _complete(wh, run_id: str, step: str, mark: dict) -> None:
    name = branch(run_id, step)
    published = mark.get("published") or {}
    for table, sid in published.items():
        fast_forward(wh, table, name, sid, wh.partition(table, run_id, step))
    for table in mark.get("tables", []):
        if table not in published:
            drop_branch(wh, table, name)
    _drop_mark(wh.root, run_id, step)


def abandon(wh, run_id: str, step: str) -> None:
    """A step that failed before its ledger row (its step lock held): its branches removed."""
    mark = read_mark(wh.root, run_id, step)
    if mark is not None and mark.get("published") is None:
        _abandon(wh, run_id, step, mark)


def _abandon(wh, run_id: str, step: str, mark: dict) -> None:
    """A step that never reached its ledger row: its branches removed, ``main`` untouched."""
    name = branch(run_id, step)
    for table in dict.fromkeys([*mark.get("tables", []), *(mark.get("published") or {})]):
        drop_branch(wh, table, name)
    _drop_mark(wh.root, run_id, step)


def _settle(wh, run_id: str, step: str, mark: dict) -> None:
    """A killed publisher's mark: completed if the ledger names its snapshots, else abandoned."""
    published = mark.get("published")
    ledger = wh.snapshots(run_id) if published else {}
    if published and all(ledger.get((step, table)) == sid for table, sid in published.items()):
        _complete(wh, run_id, step, mark)
    else:
        _abandon(wh, run_id, step, mark)


def roll_forward(wh) -> None:
    """Settles every mark a killed step left (called under the publish lock): a mark in
    publication (ledger row or not) is settled; a mark of a step killed while writing is
    abandoned once its step's lock is free (a live writer's, in this process or another, is left)."""
    from pipelines.warehouse.locks import StepBusy, StepLock

    for run_id, step in _marks(wh.root):
        mark = read_mark(wh.root, run_id, step)
        if mark is None:
            continue
        if mark.get("published") is not None:  # its publisher held this lock: it is gone
            _settle(wh, run_id, step, mark)
            continue
        try:
            with StepLock(wh.root, run_id, step):
                _abandon(wh, run_id, step, read_mark(wh.root, run_id, step) or mark)
        except StepBusy:
            continue


def recover(wh, run_id: str, step: str) -> None:
    """At the start of a step (its step lock held): what a killed attempt of the same step left
    is settled, then every other step's half-done publication."""
    with publish_lock(wh.root):
        mark = read_mark(wh.root, run_id, step)
        if mark is not None:
            _settle(wh, run_id, step, mark)
        roll_forward(wh)
