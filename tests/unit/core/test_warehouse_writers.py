"""One writer per (run, step), and what a killed writer leaves: nothing visible."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from pipelines.warehouse.locks import LOCKS, StepBusy
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

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
    assert [p.name for p in (tmp_path / LOCKS).iterdir()] == ["publish.lock"]  # no step's lock left


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


def test_a_step_removes_its_killed_predecessors_staged_documents(tmp_path):
    wh = Warehouse(tmp_path)
    docs = tmp_path / "validation"
    mine = [docs / ".staging.r1.log-end.0badc0de"]
    others = [docs / ".staging.r1.offsets.0badc0de", docs / ".staging.r2.log-end.0badc0de"]
    for d in mine + others:
        (d / "part").mkdir(parents=True)
    with wh.transaction("r1", step="log-end") as tx:
        tx.write(LEO, _rows(1))
    assert not any(d.exists() for d in mine)
    assert all(d.exists() for d in others)  # another step's, or another run's: not ours to remove


KILLED = """
import os, sys
import pyarrow as pa
from pipelines.warehouse.warehouse import Warehouse
from pipelines.warehouse.tables import SCHEMAS
rows = pa.Table.from_pylist([dict(topic="killed", partition=p, log_start_offset=0, log_end_offset=p,
                                  max_timestamp=None) for p in range(9)], schema=SCHEMAS["raw/log_end_offsets"])
with Warehouse(sys.argv[1]).transaction("r1", step="log-end") as tx:
    tx.write("raw/log_end_offsets", rows)
    tx.write("raw/quarantine", SCHEMAS["raw/quarantine"].empty_table())
    tx.writer("raw/log_end_offsets").close()  # its data file written at the table's location
    print(len(tx.writer("raw/log_end_offsets").files), flush=True)
    os.kill(os.getpid(), 9)  # kill -9 before the step's commit
"""


def test_a_writer_killed_before_its_commit_leaves_nothing_visible_and_the_rerun_replaces(tmp_path):
    """kill -9 after the step wrote its data files: the run reads as before (its previous rows),
    the table's current state too; the files are on disk, referenced by no snapshot; the step's
    next run takes the dead writer's lock and replaces the partition."""
    wh = Warehouse(tmp_path)
    wh.write_table(LEO, "r1", _rows(2), step="log-end")
    done = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9 and done.stdout.strip() == "1", done.stderr
    files = sorted((tmp_path / LEO / "data").rglob("*.parquet"))
    assert len(files) == 2  # the published one and the killed step's
    again = Warehouse(tmp_path)  # another process's view
    assert read_arrow(again, LEO, "r1").column("log_end_offset").to_pylist() == [0, 1]
    assert not again.exists("raw/quarantine", "r1")
    current = again.catalog.load_table(("raw", "log_end_offsets"))
    assert sorted(current.scan().to_arrow().column("topic").to_pylist()) == ["t", "t"]
    referenced = {task.file.file_path for task in current.scan().plan_files()}
    assert len(referenced) == 1 and {r.rsplit("/", 1)[1] for r in referenced} < {f.name for f in files}
    with again.transaction("r1", step="log-end") as tx:  # the dead writer's lock taken over
        tx.write(LEO, _rows(3))
    assert read_arrow(again, LEO, "r1").column("log_end_offset").to_pylist() == [0, 1, 2]
    assert list(again.catalog.load_table(("raw", "log_end_offsets")).refs()) == ["main"]  # no branch left
