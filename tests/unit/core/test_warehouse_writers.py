"""One writer per (run, step), debris of killed writers, and a publish finished after a kill."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from pipelines.warehouse.directory import LOCKS, StepBusy, Warehouse
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS

LEO = "raw/log_end_offsets"


def _rows(n: int) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(topic="t", partition=p, log_start_offset=0, log_end_offset=p, max_timestamp=None) for p in range(n)],
        schema=SCHEMAS[LEO],
    )


def test_a_second_writer_of_the_same_step_fails_clearly(tmp_path):
    wh = Warehouse(tmp_path)
    with wh.transaction("r1", step="log-end") as tx:
        tx.write(LEO, _rows(1))
        with pytest.raises(StepBusy, match=rf"run r1: step log-end is being written by pid {os.getpid()} on "):
            with wh.transaction("r1", step="log-end"):
                pass
        with wh.transaction("r1", step="offsets") as other:  # another step of the run: fine
            other.writer("raw/quarantine")
        with wh.transaction("r2", step="log-end") as other:  # the same step of another run: fine
            other.write(LEO, _rows(2))
    assert read_arrow(wh, LEO, "r1").num_rows == 1
    assert not any((tmp_path / LOCKS).iterdir())


def test_the_lock_of_a_dead_writer_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = tmp_path / LOCKS / "r1.log-end.lock"
    lock.parent.mkdir(parents=True)
    import socket

    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout), "start": "1", "since": "then"}))
    wh = Warehouse(tmp_path)
    with wh.transaction("r1", step="log-end") as tx:
        tx.write(LEO, _rows(3))
    assert read_arrow(wh, LEO, "r1").num_rows == 3 and not lock.exists()


def test_a_step_removes_its_killed_predecessors_staging_dirs(tmp_path):
    wh = Warehouse(tmp_path)
    table_dir = tmp_path / "raw" / "log_end_offsets"
    mine = [table_dir / ".staging.r1.log-end.0badc0de", table_dir / ".staging-r1-0badc0de"]
    others = [table_dir / ".staging.r1.offsets.0badc0de", table_dir / ".staging.r2.log-end.0badc0de"]
    for d in mine + others:
        (d / "part").mkdir(parents=True)
    with wh.transaction("r1", step="log-end") as tx:
        tx.write(LEO, _rows(1))
    assert not any(d.exists() for d in mine)
    assert all(d.exists() for d in others)  # another step's, or another run's: not ours to remove


def test_a_publish_cut_by_a_kill_is_finished_by_the_next_writer(tmp_path):
    """The journal is written, one table renamed, then the process dies: the next transaction
    of the step publishes the rest before it starts."""
    wh = Warehouse(tmp_path)
    with wh.transaction("r1", step="log-end") as tx:
        tx.write(LEO, _rows(1))
    staged = {}
    for table, rows in ((LEO, _rows(5)), ("raw/quarantine", None)):
        d = tmp_path / table / ".staging.r1.log-end.deadbeef"
        d.mkdir(parents=True)
        data = rows if rows is not None else SCHEMAS["raw/quarantine"].empty_table()
        import pyarrow.parquet as pq

        pq.write_table(data, d / "part-log-end.parquet")
        staged[table] = d
    (tmp_path / LOCKS / "r1.log-end.publishing.json").write_text(json.dumps([[t, str(p)] for t, p in staged.items()]))
    with wh.transaction("r1", step="log-end"):
        pass  # recovery runs before the block
    assert read_arrow(wh, LEO, "r1").num_rows == 5
    assert (tmp_path / "raw" / "quarantine" / "run_id=r1" / "part-log-end.parquet").exists()
    assert not any(p.exists() for p in staged.values())
    assert not (tmp_path / LOCKS / "r1.log-end.publishing.json").exists()


def test_a_reader_settles_the_run_first(tmp_path):
    """A step killed while publishing: the next reader of the run (build, validate, report)
    finishes the publish before it reads, so it sees all of the step's tables or none."""
    wh = Warehouse(tmp_path)
    staged = tmp_path / LEO / ".staging.r1.log-end.deadbeef"
    staged.mkdir(parents=True)
    import pyarrow.parquet as pq

    pq.write_table(_rows(4), staged / "part-log-end.parquet")
    (tmp_path / LOCKS).mkdir()
    (tmp_path / LOCKS / "r1.log-end.publishing.json").write_text(json.dumps([[LEO, str(staged)]]))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCKS / "r1.log-end.lock").write_text(json.dumps({"host": __import__("socket").gethostname(),
                                                                    "pid": int(dead.stdout), "start": "1"}))
    wh.settle("r2")  # another run's journal is not this reader's business
    assert not wh.exists(LEO, "r1")
    wh.settle("r1")
    assert read_arrow(wh, LEO, "r1").num_rows == 4
    assert not any((tmp_path / LOCKS).iterdir())
