"""Write-audit-publish on the Iceberg warehouse (pyiceberg, no JVM): a step writes on a branch
of its own, its ledger row names the snapshots, then each table's ``main`` is fast-forwarded to
them; a step killed -9 at any point leaves ``main`` (what ``table.scan()`` and Spark SQL without
``VERSION AS OF`` read) at a state a ledger row names, and the next step completes or abandons
what it left.

The kills are real: a child process runs the step and sends itself SIGKILL at a chosen call (no
``finally``, no handler runs). The expected rows are the rows the tests write; ``main`` is read
through pyiceberg's plain ``scan()`` and the catalog's metadata, not through kaudit's reader."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from pipelines.warehouse.iceberg import publish
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

TABLES = ("raw/group_members", "raw/offset_commits")
RUN, STEP = "r1", "extract_offsets"


def _rows(table: str, n: int, tag: str) -> pa.Table:
    schema = SCHEMAS[table]
    rows = [{name: None for name in schema.names} | {"group_id": f"{tag}-{i}"} for i in range(n)]
    return pa.Table.from_pylist(rows, schema=schema)


def _step(wh: Warehouse, run_id: str, n: int, tag: str, step: str = STEP) -> None:
    with wh.transaction(run_id, step) as tx:
        for table in TABLES:
            tx.write(table, _rows(table, n, tag))


def _main(wh: Warehouse, table: str, run_id: str = RUN) -> list[str]:
    """``run_id``'s group ids in ``table`` as an engine reading the current state sees them."""
    ice = wh.catalog.load_table(wh.ident(table))
    return sorted(ice.scan(row_filter=f"run_id = '{run_id}'").to_arrow().column("group_id").to_pylist())


def _refs(wh: Warehouse, table: str) -> dict[str, int]:
    return {name: ref.snapshot_id for name, ref in wh.catalog.load_table(wh.ident(table)).metadata.refs.items()}


def _ids(n: int, tag: str) -> list[str]:
    return sorted(f"{tag}-{i}" for i in range(n))


KILLER = textwrap.dedent("""
    import os, signal, sys
    import pyarrow as pa
    from pipelines.warehouse.iceberg import publish
    from pipelines.warehouse.warehouse import Warehouse
    from pipelines.warehouse.tables import SCHEMAS

    root, run_id, step, tables, owner, name, after, n, tag = sys.argv[1:]
    target = publish if owner == "publish" else Warehouse
    real, calls = getattr(target, name), [0]

    def killing(*args, **kwargs):  # SIGKILL at call number `after` (from 0)
        if calls[0] == int(after):
            os.kill(os.getpid(), signal.SIGKILL)
        calls[0] += 1
        return real(*args, **kwargs)

    setattr(target, name, killing)
    wh = Warehouse(root)
    with wh.transaction(run_id, step) as tx:
        for table in tables.split(","):
            schema = SCHEMAS[table]
            rows = [{c: None for c in schema.names} | {"group_id": f"{tag}-{i}"} for i in range(int(n))]
            tx.write(table, pa.Table.from_pylist(rows, schema=schema))
    """)


def _killed(wh: Warehouse, owner: str, name: str, after: int, n: int, tag: str) -> None:
    args = [str(wh.root), RUN, STEP, ",".join(TABLES), owner, name, str(after), str(n), tag]
    done = subprocess.run([sys.executable, "-c", KILLER, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == -9, done.stderr[-2000:]


@pytest.fixture()
def wh(tmp_path):
    return Warehouse(tmp_path / "warehouse")


def test_a_published_step_leaves_main_at_the_ledger_snapshots_and_no_branch(wh):
    _step(wh, RUN, 2, "old")
    _step(wh, "r2", 1, "other")
    for table in TABLES:
        assert _refs(wh, table) == {"main": wh.snapshot_id(table, "r2")}
        assert _main(wh, table) == _ids(2, "old") and _main(wh, table, "r2") == _ids(1, "other")
    assert not list((wh.root / publish.PENDING).glob("*.json"))


def test_killed_while_writing_main_and_ledger_stay_and_the_rerun_removes_the_branch(wh):
    _step(wh, RUN, 2, "old")
    before = {t: wh.snapshot_id(t, RUN) for t in TABLES}
    _killed(wh, "publish", "note", 1, 3, "new")  # first table on its branch, second not begun
    wh = Warehouse(wh.root)
    assert {t: wh.snapshot_id(t, RUN) for t in TABLES} == before
    assert [_main(wh, t) for t in TABLES] == [_ids(2, "old")] * 2
    assert publish.branch(RUN, STEP) in _refs(wh, TABLES[0])  # the killed step's, unpublished
    _step(wh, RUN, 3, "new")  # the re-run
    assert [_main(wh, t) for t in TABLES] == [_ids(3, "new")] * 2
    assert all(list(_refs(wh, t)) == ["main"] for t in TABLES)


def test_killed_before_its_ledger_row_the_next_step_abandons_it(wh):
    _step(wh, RUN, 2, "old")
    before = {t: wh.snapshot_id(t, RUN) for t in TABLES}
    _killed(wh, "Warehouse", "record", 0, 3, "new")  # branches written and marked
    wh = Warehouse(wh.root)
    assert publish.read_mark(wh.root, RUN, STEP)["published"]
    assert {t: wh.snapshot_id(t, RUN) for t in TABLES} == before
    assert [_main(wh, t) for t in TABLES] == [_ids(2, "old")] * 2
    _step(wh, "r2", 1, "other")  # another run's step: rolls the mark back
    assert publish.read_mark(wh.root, RUN, STEP) is None
    assert all(list(_refs(wh, t)) == ["main"] for t in TABLES)
    assert [_main(wh, t) for t in TABLES] == [_ids(2, "old")] * 2
    assert {t: wh.snapshot_id(t, RUN) for t in TABLES} == before


def test_killed_between_two_fast_forwards_each_main_is_a_ledger_state_and_the_next_step_completes(wh):
    _step(wh, RUN, 2, "old")
    before = {t: wh.snapshot_id(t, RUN) for t in TABLES}
    _killed(wh, "publish", "fast_forward", 1, 3, "new")  # first table's main moved, second's not
    wh = Warehouse(wh.root)
    after = {t: wh.snapshot_id(t, RUN) for t in TABLES}  # the ledger row was written
    assert all(after[t] != before[t] for t in TABLES)
    first, second = TABLES
    assert _refs(wh, first)["main"] == after[first] and _main(wh, first) == _ids(3, "new")
    assert _refs(wh, second)["main"] == before[second] and _main(wh, second) == _ids(2, "old")
    _step(wh, "r2", 1, "other")  # another run's step rolls it forward
    assert publish.read_mark(wh.root, RUN, STEP) is None
    for table in TABLES:
        assert list(_refs(wh, table)) == ["main"]
        assert _main(wh, table) == _ids(3, "new") == sorted(wh.read_arrow(table, RUN).column("group_id").to_pylist())
    assert wh.snapshot_id(TABLES[1], RUN) == after[TABLES[1]]


def test_a_step_whose_main_moved_meanwhile_is_rebased_onto_it(wh, tmp_path):
    """Run r1's step wrote its branch; run r2's step published the same table before r1's
    publication: r1's snapshot is put on top of r2's (no fast-forward could keep both)."""
    from pipelines.warehouse.writer import TableWriter

    table = TABLES[0]
    _step(wh, RUN, 1, "old")
    writer = TableWriter(wh, table, SCHEMAS[table], wh.partition(table, RUN, STEP))
    writer.write(_rows(table, 2, "new"))
    name = publish.open_branch(wh, table, RUN, STEP)
    sid, rows = wh._commit(table, RUN, STEP, writer)
    assert rows == 2 and sid == publish.head(wh, table, name)
    assert _main(wh, table) == _ids(1, "old")  # the branch is not the current state
    _step(wh, "r2", 1, "other")  # main moves past r1's branch point
    final = publish.publish(wh, RUN, STEP, [(table, sid, 2)])
    assert final[0][1] != sid  # rebased
    assert _refs(wh, table) == {"main": final[0][1]} == {"main": wh.snapshot_id(table, RUN)}
    assert _main(wh, table) == _ids(2, "new") and _main(wh, table, "r2") == _ids(1, "other")


def _snapshots(wh: Warehouse, table: str) -> int:
    return len(wh.catalog.load_table(wh.ident(table)).metadata.snapshots)


def test_no_rows_where_no_snapshot_holds_the_run_is_recorded_without_a_commit(wh):
    """A step's table of no rows, the run's partition empty everywhere: the table is created and
    the ledger names the step's write of it, with no snapshot to read; once an attempt wrote
    rows, a later attempt of no rows replaces them (a commit), and readers see none."""
    table = TABLES[0]
    _step(wh, RUN, 0, "none")
    assert wh.catalog.table_exists(wh.ident(table)) and _snapshots(wh, table) == 0
    assert wh.exists(table, RUN) and wh.snapshot_id(table, RUN) is None and wh.row_count(table, RUN) == 0
    _step(wh, RUN, 2, "rows")
    assert _main(wh, table) == _ids(2, "rows") and wh.row_count(table, RUN) == 2
    _step(wh, RUN, 0, "none")
    assert _main(wh, table) == [] and wh.row_count(table, RUN) == 0
    assert wh.snapshot_id(table, RUN) is not None  # the empty partition is a snapshot
    assert _refs(wh, table) == {"main": wh.snapshot_id(table, RUN)}


def test_expired_snapshots_leave_every_runs_rows_readable(wh):
    """Snapshots older than the table's ``history.expire.max-snapshot-age-ms`` are expired when
    a step is published (branch heads and the newest kept); each run's rows read as written."""
    for r in range(3):
        _step(wh, f"r{r}", r + 1, f"run{r}")
        if r == 0:
            for table in (*TABLES, "meta/commits"):
                with wh.catalog.load_table(wh.ident(table)).transaction() as txn:
                    txn.set_properties({"history.expire.max-snapshot-age-ms": "0"})
    fresh = Warehouse(wh.root)
    for table in TABLES:
        assert _snapshots(fresh, table) == 1  # main's; the runs' earlier snapshots expired
        for r in range(3):
            assert sorted(fresh.read_arrow(table, f"r{r}").column("group_id").to_pylist()) == _ids(r + 1, f"run{r}")
            assert fresh.row_count(table, f"r{r}") == r + 1
    assert _snapshots(fresh, "meta/commits") == 1
    ledger = fresh.snapshots("r0")
    assert ledger[(STEP, TABLES[0])] not in {s.snapshot_id for s in
                                              fresh.catalog.load_table(fresh.ident(TABLES[0])).metadata.snapshots}


def test_a_transaction_reads_each_staged_change_and_computes_the_metadata_once_per_change(wh):
    """``publish.transaction``'s metadata, read any number of times between two changes, is one
    object holding every change staged so far, as pyiceberg's own transaction computes it."""
    _step(wh, RUN, 2, "a")
    ice = wh.catalog.load_table(wh.ident(TABLES[0]))
    txn, plain = publish.transaction(ice), ice.transaction()
    first = txn.table_metadata
    assert txn.table_metadata is first
    for t in (txn, plain):
        publish.stage_branch(t, "kaudit_r2_step")
    staged = txn.table_metadata
    assert staged is not first and staged is txn.table_metadata
    assert "kaudit_r2_step" not in first.refs
    assert staged.refs == plain.table_metadata.refs
    assert staged.refs["kaudit_r2_step"].snapshot_id == staged.refs["main"].snapshot_id
    publish.commit(txn)
    assert _refs(wh, TABLES[0])["kaudit_r2_step"] == _refs(wh, TABLES[0])["main"]
