"""The warehouse: table paths, run ids and atomic run-partition writes (reads: ``pipelines.warehouse.reading``).

Layout: ``<root>/<layer>/<table>/run_id=<id>/part-*.parquet`` (hive partitioning; the files
themselves carry no ``run_id`` column, the directory does). Every writer stages into a hidden
sibling directory (``.staging-*``, ignored by Spark, pyarrow and DuckDB) and publishes with
renames, so a killed step never leaves a half-written partition and re-running a step with
the same run id replaces its partition whole. A step that writes several tables publishes
them together at the end of a :meth:`Warehouse.transaction`; if the step fails, none is.

One process at a time writes a (run, step) (:class:`StepLock`, a lock file with the writer's pid;
a dead writer's lock is taken over, its staging dirs removed). Publishing first writes a journal
of its renames and completes it even after a kill (the next writer of the step, or the next
reader of the run through :meth:`Warehouse.settle`, rolls it forward), so a step's tables are
seen together: all of them or none.

A few tables are written by several steps of one run (``raw/quarantine``, and ``raw/znodes``
if both a live walk and a snapshot read feed a run): they are *shared*. Each step writes
its own file ``part-<step>.parquet`` there and publishing replaces only that file (an atomic
``os.replace``), so steps of one run never overwrite each other's rows.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.errors import KauditError
from pipelines.warehouse.runs import RunLog, check_run_id
from pipelines.warehouse.tables import SCHEMAS


class StepBusy(KauditError):
    """Another live process writes the same step of the same run. Exit 1."""


DEFAULT_ROOT = "warehouse"
SHARED_TABLES = frozenset({"raw/quarantine", "raw/znodes"})
STAGING = ".staging."  # + <run>.<step>.<random>: '.' is in no run id or step name
LOCKS = ".locks"  # <root>/.locks/<run>.<step>.lock and .publishing.json


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None if there is none: with the
    pid it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "?"  # alive, start time unknown (no /proc)
    return stat.rsplit(")", 1)[1].split()[19]


class StepLock:
    """One writer per (run, step): ``<root>/.locks/<run>.<step>.lock`` holds the writer's host, pid
    and process start. A second writer fails with :class:`StepBusy`; the lock of a writer that
    died (same host, no such process) is taken over."""

    def __init__(self, root: Path, run_id: str, step: str):
        self.path = root / LOCKS / f"{run_id}.{step}.lock"
        self.run_id, self.step = run_id, step

    def __enter__(self) -> StepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"host": socket.gethostname(), "pid": os.getpid(), "start": _process_start(os.getpid()),
              "since": datetime.now(UTC).isoformat(timespec="seconds")}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and self._alive(holder):
                    raise StepBusy(
                        f"run {self.run_id}: step {self.step} is being written by pid {holder.get('pid')} on "
                        f"{holder.get('host')} since {holder.get('since')}; wait for it or use another --run-id"
                    ) from None
                self.path.unlink(missing_ok=True)  # its writer died: take the lock over
                continue
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            return self
        raise StepBusy(f"run {self.run_id}: cannot take the lock {self.path}")

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None  # being written, or torn by a crash: not a live holder's

    @staticmethod
    def _alive(holder: dict) -> bool:
        if holder.get("host") != socket.gethostname():
            return True  # another machine's writer: cannot tell, assume it runs
        pid = holder.get("pid")
        start = _process_start(pid) if isinstance(pid, int) else None
        return start is not None and (start == holder.get("start") or "?" in (start, holder.get("start")))

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)


class TableWriter:
    """Streams record batches of one table into one Parquet file of a staging dir."""

    def __init__(self, path: Path, schema: pa.Schema, dictionary: bool | list[str] = True, *,
                 statistics: bool | list[str] = True, batch_size: int | None = None):
        """``dictionary``: dictionary-encode every column (default) or only the named ones
        (unique values such as paths or ids only cost time and space in a dictionary).
        ``statistics``: min/max and null counts of every column (default) or only the named
        ones (long unique strings nobody filters on only cost time). ``batch_size``: values
        the Parquet encoder takes per internal step (pyarrow's default 1024)."""
        self.schema = schema
        self.rows = 0
        self._path = path
        self._options = {"compression": "zstd", "use_dictionary": dictionary, "write_statistics": statistics}
        if batch_size is not None:
            self._options["write_batch_size"] = batch_size
        self._writer: pq.ParquetWriter | None = None

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        if data.num_rows == 0:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._path, self.schema, **self._options)
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        data = data.select(self.schema.names)
        if not data.schema.equals(self.schema):  # (a cast imports pyarrow.compute, ~0.06 s)
            data = data.cast(self.schema)
        self._writer.write_table(data)
        self.rows += data.num_rows

    def close(self) -> None:
        if self._writer is None:  # an empty table is still a table: write its schema
            # (a writer closed unused, not schema.empty_table(): that makes pyarrow import pandas, ~0.4 s)
            pq.ParquetWriter(self._path, self.schema, **self._options).close()
        else:
            self._writer.close()


@dataclass
class Transaction:
    """Staged partitions of one step, published together by :meth:`Warehouse.transaction`."""

    warehouse: Warehouse
    run_id: str
    step: str = "main"
    staged: dict[str, Path] = field(default_factory=dict)
    writers: dict[str, TableWriter] = field(default_factory=dict)

    def staging_dir(self, table: str) -> Path:
        """A fresh directory to stage ``table``'s partition in (Spark may write into it)."""
        if table not in self.staged:
            table_dir = self.warehouse.table_dir(table)
            table_dir.mkdir(parents=True, exist_ok=True)
            self.staged[table] = table_dir / f"{STAGING}{self.run_id}.{self.step}.{uuid.uuid4().hex[:8]}"
        return self.staged[table]

    def writer(self, table: str, schema: pa.Schema | None = None, *,
               dictionary: bool | list[str] = True, **options) -> TableWriter:
        """The table's writer (made on first use; ``options``: :class:`TableWriter`'s)."""
        if table not in self.writers:
            path = self.staging_dir(table)
            path.mkdir(parents=True, exist_ok=True)
            self.writers[table] = TableWriter(path / f"part-{self.step}.parquet", schema or SCHEMAS[table], dictionary,
                                              **options)
        return self.writers[table]

    def write(self, table: str, data: pa.Table, schema: pa.Schema | None = None) -> None:
        self.writer(table, schema).write(data)


class Warehouse:
    """The Parquet layout (this module's docstring); ``pipelines.warehouse.iceberg.warehouse.IcebergWarehouse``
    keeps the same interface with Iceberg tables (:func:`pipelines.warehouse.formats.open_warehouse` picks one)."""

    format = "parquet"

    def __init__(self, root: str | os.PathLike = DEFAULT_ROOT):
        self.root = Path(root).absolute()
        self.runs = RunLog(self.root)

    # -- paths -----------------------------------------------------------------
    def table_dir(self, table: str) -> Path:
        return self.root / table

    def partition_dir(self, table: str, run_id: str) -> Path:
        return self.table_dir(table) / f"run_id={check_run_id(run_id)}"

    def exists(self, table: str, run_id: str) -> bool:
        return self.partition_dir(table, run_id).is_dir()

    def run_ids(self, table: str) -> list[str]:
        d = self.table_dir(table)
        if not d.is_dir():
            return []
        return sorted(p.name.split("=", 1)[1] for p in d.iterdir() if p.is_dir() and p.name.startswith("run_id="))

    # -- writes ----------------------------------------------------------------
    @contextmanager
    def transaction(self, run_id: str, step: str = "main") -> Iterator[Transaction]:
        """Stage the tables of one step; publish them all when the block ends without error.

        ``step`` names the step's files in shared tables (see the module docstring). One process
        at a time writes a (run, step) (:class:`StepLock`); it first finishes a publish that a
        killed writer of the same step left half done, and removes that writer's staging dirs."""
        tx = Transaction(self, check_run_id(run_id), check_run_id(step, "step"))
        with StepLock(self.root, run_id, step):
            self._recover(run_id, step)
            try:
                yield tx
                for w in tx.writers.values():
                    w.close()
            except BaseException:
                for w in tx.writers.values():
                    if w._writer is not None:
                        w._writer.close()
                for path in tx.staged.values():
                    shutil.rmtree(path, ignore_errors=True)
                raise
            journal = self._journal(run_id, step)
            moves = [[table, str(path)] for table, path in tx.staged.items()]
            tmp = journal.with_name(f".{journal.name}.tmp")
            tmp.write_text(json.dumps(moves))
            os.replace(tmp, journal)  # from here on the publish completes, even after a kill
            self._roll_forward(run_id, moves)
            journal.unlink()
        self.runs.record_step(run_id, step)

    def settle(self, run_id: str, wait: float = 30.0) -> None:
        """Before a step reads the run: wait while another step of it is publishing (its
        renames take milliseconds), and finish a publish whose writer was killed, so a reader
        sees every table of a step or none of them."""
        suffix = ".publishing.json"
        deadline = time.monotonic() + wait
        locks = self.root / LOCKS
        for journal in sorted(locks.glob(f"{run_id}.*{suffix}")) if locks.is_dir() else []:
            step = journal.name[len(run_id) + 1 : -len(suffix)]
            while journal.exists():
                try:
                    with StepLock(self.root, run_id, step):  # its writer is gone: finish for it
                        self._recover(run_id, step)
                except StepBusy:
                    if time.monotonic() > deadline:
                        raise StepBusy(f"run {run_id}: step {step} is still publishing after {wait:.0f} s") from None
                    time.sleep(0.05)

    def _journal(self, run_id: str, step: str) -> Path:
        return self.root / LOCKS / f"{run_id}.{step}.publishing.json"

    def _roll_forward(self, run_id: str, moves: list[list[str]]) -> None:
        """Publish each staged partition of ``moves`` that is still staged (idempotent)."""
        for table, staged in moves:
            path, final = Path(staged), self.partition_dir(table, run_id)
            if not path.exists():
                continue  # published before the kill
            if table in SHARED_TABLES:
                self._publish_files(path, final)
            else:
                self._publish(path, final)

    def _recover(self, run_id: str, step: str) -> None:
        """Finish a publish a killed writer of (run, step) left half done; remove its staging
        dirs (and a pre-0.1.6 writer's, named by run only) and replaced partitions."""
        journal = self._journal(run_id, step)
        if journal.exists():
            self._roll_forward(run_id, json.loads(journal.read_text()))
            journal.unlink()
        if not self.root.is_dir():
            return
        debris = (f"{STAGING}{run_id}.{step}.*", f".staging-{run_id}-" + "[0-9a-f]" * 8, f".replaced-run_id={run_id}-*")
        for pattern in debris:
            for path in self.root.glob(f"*/*/{pattern}"):
                shutil.rmtree(path, ignore_errors=True)

    def write_table(
        self, table: str, run_id: str, data: pa.Table, schema: pa.Schema | None = None, step: str = "main"
    ) -> Path:
        with self.transaction(run_id, step) as tx:
            tx.write(table, data, schema)
            tx.writer(table, schema)  # make sure an empty table still gets its partition
        return self.partition_dir(table, run_id)

    @staticmethod
    def _publish(staged: Path, final: Path) -> None:
        if not staged.exists():
            staged.mkdir(parents=True)
        old = None
        if final.exists():
            old = final.with_name(f".replaced-{final.name}-{uuid.uuid4().hex[:8]}")
            os.rename(final, old)
        os.rename(staged, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    @staticmethod
    def _publish_files(staged: Path, final: Path) -> None:
        final.mkdir(parents=True, exist_ok=True)
        for f in staged.iterdir():
            os.replace(f, final / f.name)
        shutil.rmtree(staged, ignore_errors=True)

    # -- run metadata ----------------------------------------------------------
    def meta_path(self, run_id: str, step: str) -> Path:
        return self.partition_dir("runs", run_id) / f"{step}.json"

    def write_meta(self, run_id: str, step: str, meta: dict) -> None:
        """Per-step run metadata (``runs/run_id=<id>/<step>.json``), written atomically."""
        path = self.meta_path(run_id, step)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str))
        os.replace(tmp, path)

    def read_meta(self, run_id: str, step: str) -> dict:
        path = self.meta_path(run_id, step)
        return json.loads(path.read_text()) if path.exists() else {}
