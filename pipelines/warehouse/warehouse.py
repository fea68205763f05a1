"""The warehouse: every table an Apache Iceberg table of one catalog, a step's tables committed together.

Tables: each warehouse table ``<layer>/<name>`` is the Iceberg table ``<layer>.<name>`` (a named
cluster's under ``clusters.<alias>``), partitioned by ``run_id`` (and ``step`` in the tables
several steps of a run write: ``raw/quarantine``, ``raw/znodes``); its declared Arrow schema is
mapped once to Iceberg's (:mod:`pipelines.warehouse.iceberg.schemas`). The catalog
(:mod:`pipelines.warehouse.iceberg.catalog`) is a SQLite file beside the local directory by
default, or PostgreSQL (``--catalog``); the tables' files live in the local directory, or at an
object-store or HDFS location (``s3a://bucket/prefix``, ``hdfs://namenode:port/prefix``).

A step (:meth:`Warehouse.transaction`) writes each of its tables as it goes:

- Arrow writers (the extractors, the validation results) write Iceberg data files straight
  into the table's location as their batches come (:mod:`pipelines.warehouse.writer`); at the
  step's end each table gets **one commit** on the step's own branch ``kaudit_<run>_<step>``
  (set to the table's ``main``): the run's partition's data files replaced by the step's
  (:mod:`pipelines.warehouse.iceberg.partition_commit`), pyiceberg, no JVM;
- Spark (the build) commits each of its writes of a table on the step's branch through
  ``iceberg-spark-runtime`` (:meth:`Warehouse.write_spark`), the executors writing the data
  files to the tables' location: a Spark cluster needs no mount it shares with the driver.

Until the step is published those snapshots are its staging: no reader sees them, neither
kaudit's (by the ledger) nor an engine reading a table's current state (``main``). Then the
step is published (:mod:`pipelines.warehouse.iceberg.publish`): one append to the ledger table
``meta.commits`` records the snapshot id of each table of the step (the step's single point of
publication), then each table's ``main`` is fast-forwarded to it and the branch removed; a
publication a kill cut short is completed by the next step. A step killed before its ledger
row leaves snapshots no ledger row names and data files no snapshot references: nothing visible;
running it again replaces its partitions.

Readers go through the ledger (:meth:`Warehouse.snapshot_id`): a run's table is read at the
snapshot its last step recorded, filtered to its partition: a time-travel read ("the audit as
of run X"). The ledger is loaded again only when the catalog's row of it names another metadata
file (one indexed SQL query; a commit writes a new one), its rows of a run scanned once per
ledger snapshot; a table's metadata is loaded again only when it does not hold the snapshot to
read, and a row count is counted once per (table, snapshot, run).

The local directory ``root`` holds what is not a table: the step locks (one writer per run and
step, :mod:`pipelines.warehouse.locks`), the run records (``runs/``, :mod:`pipelines.warehouse.runs`),
the marks of publications in progress, Spark's and dbt's working files and logs, and a run's
documents (``validation``'s results.json and failing rows, ``reports``' page, summary and
findings): files, published by a local rename into ``<root>/<name>/run_id=<id>/`` once the
step's tables and its ledger row are committed.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute

from pipelines.errors import InputError, UsageError
from pipelines.warehouse.iceberg import partition_commit, publish, schemas
from pipelines.warehouse.iceberg.catalog import CatalogConfig
from pipelines.warehouse.locks import StepLock
from pipelines.warehouse.runs import RunLog, check_run_id
from pipelines.warehouse.writer import TableWriter, Transaction

DEFAULT_ROOT = "warehouse"
LEDGER = "meta/commits"
LEDGER_SCHEMA = pa.schema([
    ("step", pa.string()),
    ("table_name", pa.string()),
    ("snapshot_id", pa.int64()),
    ("rows", pa.int64()),
    ("committed_at", pa.timestamp("ms", tz="UTC")),
])
TOKEN = "kaudit.commit-token"
STAGING = ".staging."  # + <run>.<step>.<random>: a run's documents before their rename
_OPENING = threading.Lock()  # one thread at a time opens a warehouse's catalog
_CREATING = threading.Lock()  # one thread at a time creates tables (Spark's writes run side by side)
OLD_LAYERS = ("raw", "core", "marts")  # the retired Parquet layout: <root>/<layer>/<table>/run_id=<id>/


def open_warehouse(location: str | os.PathLike = DEFAULT_ROOT, catalog: str | None = None,
                   local: str | os.PathLike | None = None) -> Warehouse:
    """The warehouse whose tables' files are at ``location`` (a directory, or an object-store or
    HDFS URI: ``s3a://bucket/prefix``), its catalog ``catalog`` (default: a SQLite file beside
    the directory) and its local directory ``local`` (locks, run records, documents; default:
    ``location`` when it is a directory, required for a URI)."""
    text = str(location)
    is_uri = "://" in text
    if is_uri and local is None:
        raise UsageError(f"--warehouse {text}: an object-store warehouse needs a local directory for its "
                         "run records and documents (--warehouse-local DIR)")
    return Warehouse(Path(local if is_uri else location), location=text if is_uri else None, catalog=catalog)


def check_format(fmt: str) -> None:
    """The deprecated ``--warehouse-format``: ``iceberg`` (the only format) passes; anything else
    is a :class:`~pipelines.errors.UsageError` (exit 2)."""
    if fmt != "iceberg":
        raise UsageError(f"--warehouse-format {fmt}: Parquet warehouses are no longer written; every warehouse "
                         "table is an Apache Iceberg table (drop the option)")


def check_not_parquet(root: Path, config: CatalogConfig) -> None:
    """An :class:`~pipelines.errors.InputError` (exit 1) when ``root`` holds tables of the Parquet
    layout kaudit no longer reads or writes (``<layer>/<table>/run_id=<id>/`` directories) and
    its catalog ``config`` is a SQLite file not made yet: checked when the catalog is first opened."""
    if config.sqlite_path is None or config.sqlite_path.exists():
        return
    for layer in OLD_LAYERS:
        if next(Path(root).absolute().glob(f"{layer}/*/run_id=*"), None) is not None:
            raise InputError(f"{Path(root).absolute()}: a Parquet warehouse of kaudit before 0.2 (<layer>/<table>/"
                             "run_id=<id>/ directories, no Iceberg catalog); kaudit writes Iceberg tables only: "
                             "use a new --warehouse directory, or copy its runs in with kaudit migrate-warehouse")


class Warehouse:
    """The warehouse of local directory ``root`` with its tables in the Iceberg catalog ``catalog``
    and their files at ``location`` (default: ``root``); ``namespace`` goes before every table's
    layer (a named cluster's tables: :mod:`pipelines.clusters`)."""

    def __init__(self, root: str | os.PathLike = DEFAULT_ROOT, location: str | None = None,
                 catalog: str | None = None, namespace: tuple[str, ...] = ()):
        self.root = Path(root).absolute()
        self.runs = RunLog(self.root)
        self.catalog_config = CatalogConfig.for_warehouse(self.root, location, catalog)
        self.namespace = namespace
        self._catalog = None
        self._loaded: dict[str, object] = {}  # table -> its pyiceberg Table, as last loaded
        self._ledger_cache: dict[str, tuple[int | None, pa.Table]] = {}  # run -> (ledger snapshot, its rows)
        self._counts: dict[tuple[str, int, str], int] = {}  # (table, snapshot, run) -> rows

    # -- the catalog -----------------------------------------------------------------------
    @property
    def catalog(self):
        """The catalog, opened once per warehouse object: threads of one process (the demo's runs
        side by side) share it; a new catalog file's tables created by another process at the
        same moment ("already exists") are opened as they are."""
        with _OPENING:
            if self._catalog is None:
                from sqlalchemy.exc import OperationalError

                check_not_parquet(self.root, self.catalog_config)

                try:
                    self._catalog = self.catalog_config.open()
                except OperationalError as err:
                    if "already exists" not in str(err):
                        raise
                    self._catalog = self.catalog_config.open()
        return self._catalog

    def table(self, table: str, declared: pa.Schema | None = None):
        """The Iceberg table of warehouse ``table`` (created, with its namespace, on first use),
        its files under ``<location>/<namespace>/<table>/`` (``raw/znodes``,
        ``clusters/<alias>/raw/znodes``)."""
        from pyiceberg.exceptions import NoSuchTableError

        ident = self.ident(table)
        cat = self.catalog
        try:  # (the catalog's table_exists loads the table's metadata too)
            return self._own_retries(cat.load_table(ident))
        except NoSuchTableError:
            pass
        schema = schemas.iceberg_schema(table, declared if declared is not None else self.declared(table))
        with _CREATING:
            self._namespace(ident[:-1])
            try:
                return cat.create_table(ident, schema=schema, partition_spec=schemas.partition_spec(schema, table),
                                        location="/".join((self.catalog_config.location, *ident)),
                                        properties=publish.TABLE_PROPERTIES)
            except Exception as err:
                try:  # another writer created it first
                    return cat.load_table(ident)
                except NoSuchTableError:
                    raise err from None

    @staticmethod
    def _own_retries(ice):
        """``ice`` with pyiceberg's own commit retry off (:data:`publish.TABLE_PROPERTIES`), set once
        on a table an older kaudit created."""
        from pyiceberg.exceptions import CommitFailedException

        if all(ice.properties.get(k) == v for k, v in publish.TABLE_PROPERTIES.items()):
            return ice
        try:
            with ice.transaction() as txn:
                txn.set_properties(publish.TABLE_PROPERTIES)
        except CommitFailedException:  # another writer changed it meanwhile (and set them too)
            pass
        return ice.refresh()

    def _namespace(self, namespace: tuple[str, ...]) -> None:
        """Creates ``namespace`` unless it exists. pyiceberg's SQL catalog checks, then inserts: a
        writer of another process that inserts between the two makes the insert fail."""
        from sqlalchemy.exc import IntegrityError

        try:
            self.catalog.create_namespace_if_not_exists(namespace)
        except IntegrityError:
            if not self.catalog.namespace_exists(namespace):
                raise

    @staticmethod
    def declared(table: str) -> pa.Schema:
        """The declared Arrow schema of ``table`` (raw, core, mart, or the ledger)."""
        return LEDGER_SCHEMA if table == LEDGER else schemas.declaration(table)

    def ident(self, table: str) -> tuple[str, ...]:
        """The catalog's identifier of warehouse ``table``: ``raw/znodes`` -> ``("raw", "znodes")``,
        a named cluster's ``("clusters", <alias>, "raw", "znodes")``."""
        return (*self.namespace, *schemas.identifier(table))

    def spark_identifier(self, table: str) -> str:
        """``table`` as Spark names it: ``kaudit.raw.znodes``, ``kaudit.clusters.<alias>.raw.znodes``."""
        return spark_identifier(table, self.namespace)

    # -- reads -----------------------------------------------------------------------------
    def _load(self, table: str, snapshot_id: int | None = None):
        """The pyiceberg table of ``table``: as last loaded when that holds ``snapshot_id``,
        else loaded again from the catalog."""
        ice = self._loaded.get(table)
        if ice is None or snapshot_id is None or ice.snapshot_by_id(snapshot_id) is None:
            ice = self._loaded[table] = self.catalog.load_table(self.ident(table))
        return ice

    def _metadata_location(self, table: str) -> str | None:
        """The metadata file the catalog's row of ``table`` names (None: no such table), from
        the SQL catalog's ``iceberg_tables``, without reading the file."""
        from sqlalchemy import text

        ident = self.ident(table)
        with self.catalog.engine.connect() as db:
            row = db.execute(text("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = :c "
                                  "AND table_namespace = :n AND table_name = :t"),
                             {"c": self.catalog.name, "n": ".".join(ident[:-1]), "t": ident[-1]}).first()
        return None if row is None else row[0]

    def _ledger(self):
        """The ledger table as the catalog has it now (None: nothing committed yet)."""
        from pyiceberg.exceptions import NoSuchTableError

        ice = self._loaded.get(LEDGER)
        if ice is not None and ice.metadata_location == self._metadata_location(LEDGER):
            return ice
        try:
            ice = self._loaded[LEDGER] = self.catalog.load_table(self.ident(LEDGER))
        except NoSuchTableError:
            return None
        return ice

    def _ledger_rows(self, run_id: str) -> pa.Table:
        from pyiceberg.expressions import EqualTo

        ledger = self._ledger()
        if ledger is None:
            return LEDGER_SCHEMA.empty_table()
        snap = ledger.current_snapshot()
        head = None if snap is None else snap.snapshot_id
        cached = self._ledger_cache.get(run_id)
        if cached is not None and cached[0] == head:
            return cached[1]
        rows = ledger.scan(row_filter=EqualTo(schemas.RUN_ID, run_id)).to_arrow()
        self._ledger_cache[run_id] = (head, rows)
        return rows

    def snapshots(self, run_id: str) -> dict[tuple[str, str], int | None]:
        """(step, table) -> the snapshot id its last commit in run ``run_id`` recorded (None: the
        table had no snapshot at all, nothing written to it yet)."""
        rows = self._ledger_rows(check_run_id(run_id)).sort_by("committed_at").to_pylist()
        return {(r["step"], r["table_name"]): r["snapshot_id"] for r in rows}

    def written(self, table: str, run_id: str) -> tuple[bool, int | None]:
        """(a step of run ``run_id`` wrote ``table``, the snapshot to read it at): the newest
        snapshot any step of the run recorded for it (a shared table's steps each commit after
        the one before), None when there is nothing to read."""
        ids = [sid for (_, t), sid in self.snapshots(run_id).items() if t == table]
        known = list(dict.fromkeys(s for s in ids if s is not None))
        if len(known) > 1:
            return True, max(known, key=lambda s: self._committed_at(table, s))
        return bool(ids), (known[0] if known else None)

    def _readable(self, table: str, snapshot_id: int) -> int:
        """``snapshot_id``, or ``main``'s snapshot once it expired (:func:`publish.stage_expiry`):
        every snapshot published after a run's holds the run's partition as it was published."""
        ice = self._load(table, snapshot_id)
        if ice.snapshot_by_id(snapshot_id) is not None:
            return snapshot_id
        main = ice.metadata.snapshot_by_name(publish.MAIN)
        return snapshot_id if main is None else main.snapshot_id

    def snapshot_id(self, table: str, run_id: str) -> int | None:
        """The snapshot to read run ``run_id``'s ``table`` at (:meth:`written`, :meth:`_readable`)."""
        sid = self.written(table, run_id)[1]
        return None if sid is None else self._readable(table, sid)

    def _committed_at(self, table: str, snapshot_id: int) -> int:
        snap = self._load(table, snapshot_id).snapshot_by_id(snapshot_id)
        return snap.timestamp_ms if snap is not None else 0

    def exists(self, table: str, run_id: str) -> bool:
        return self.written(table, run_id)[0]

    def run_ids(self, table: str) -> list[str]:
        ledger = self._ledger()
        if ledger is None:
            return []
        data = ledger.scan(selected_fields=("run_id", "table_name")).to_arrow()
        return sorted(set(data.filter(pa.compute.equal(data["table_name"], table))["run_id"].to_pylist()))

    def read_arrow(self, table: str, run_id: str, declared: pa.Schema | None = None,
                   columns: list[str] | None = None) -> pa.Table:
        """Run ``run_id``'s rows of ``table`` as its declared Arrow schema (only ``columns``, in
        that order, when given), read at the snapshot the ledger recorded (empty when no step of
        the run wrote it)."""
        from pyiceberg.expressions import EqualTo

        declared = declared if declared is not None else self.declared(table)
        if columns is not None:
            declared = pa.schema([declared.field(c) for c in columns])
        sid = self.snapshot_id(table, run_id)
        if sid is None:
            return pa.Table.from_batches([], declared)
        scan = self._load(table, sid).scan(row_filter=EqualTo(schemas.RUN_ID, run_id), snapshot_id=sid,
                                           selected_fields=tuple(declared.names) or ("*",))
        return schemas.to_declared(table, scan.to_arrow(), declared)

    def schema_at(self, table: str, snapshot_id: int):
        """The Iceberg schema ``table`` had at ``snapshot_id`` (pyiceberg's)."""
        ice = self._load(table, snapshot_id)
        snap = ice.snapshot_by_id(snapshot_id)
        return ice.schemas()[snap.schema_id] if snap is not None and snap.schema_id is not None else ice.schema()

    def read_step(self, table: str, run_id: str, step: str) -> pa.Table:
        """The rows ``step`` of run ``run_id`` wrote to the shared ``table`` (its own partition)."""
        from pyiceberg.expressions import And, EqualTo

        sid = self.snapshot_id(table, run_id)
        declared = self.declared(table)
        if sid is None:
            return declared.empty_table()
        where = And(EqualTo(schemas.RUN_ID, run_id), EqualTo(schemas.STEP, step))
        scan = self._load(table, sid).scan(row_filter=where, snapshot_id=sid)
        return schemas.to_declared(table, scan.to_arrow(), declared)

    def row_count(self, table: str, run_id: str) -> int:
        """Rows of run ``run_id``'s ``table``, from the manifests' file records (no data read)."""
        sid = self.snapshot_id(table, run_id)
        return 0 if sid is None else self.rows_at(table, sid, run_id)

    def _scan(self, table: str, snapshot_id: int, run_id: str, columns: tuple[str, ...] = ("*",)):
        from pyiceberg.expressions import EqualTo

        return self._load(table, snapshot_id).scan(row_filter=EqualTo(schemas.RUN_ID, run_id),
                                                   snapshot_id=snapshot_id, selected_fields=columns)

    def rows_at(self, table: str, snapshot_id: int, run_id: str) -> int:
        """Rows of run ``run_id``'s partition of ``table`` at ``snapshot_id``, from the manifests'
        file records (counted once per table, snapshot and run)."""
        key = (table, snapshot_id, run_id)
        if key not in self._counts:
            scan = self._scan(table, snapshot_id, run_id)
            tasks = list(scan.plan_files())
            if any(task.delete_files for task in tasks):  # rows deleted by position: count what is left
                self._counts[key] = scan.to_arrow().num_rows
            else:
                self._counts[key] = sum(task.file.record_count for task in tasks)
        return self._counts[key]

    def non_null_at(self, table: str, snapshot_id: int, run_id: str, column: str) -> int:
        """Non-null values of ``column`` in run ``run_id``'s partition of ``table`` at
        ``snapshot_id``, from the manifests' value and null counts (the column is read where a
        data file has none, or rows were deleted by position)."""
        scan = self._scan(table, snapshot_id, run_id)
        fid = self._load(table, snapshot_id).schema().find_field(column).field_id
        tasks = list(scan.plan_files())
        counted = [(t.file.value_counts or {}).get(fid) is not None
                   and (t.file.null_value_counts or {}).get(fid) is not None for t in tasks]
        if all(counted) and not any(t.delete_files for t in tasks):
            return sum(t.file.value_counts[fid] - t.file.null_value_counts[fid] for t in tasks)
        return self._scan(table, snapshot_id, run_id, (column,)).to_arrow().column(column).drop_null().length()

    # -- writes ----------------------------------------------------------------------------
    @contextmanager
    def transaction(self, run_id: str, step: str = "main") -> Iterator[Transaction]:
        """The step's writes (:class:`~pipelines.warehouse.writer.Transaction`); when the block ends
        without error each table the step wrote is committed as one snapshot on the step's
        branch, the step is published (the ledger row naming them all, ``main`` fast-forwarded),
        then its documents are renamed into place. On error nothing is published: the step's
        branches are removed and the data files its writers wrote deleted. One process at a
        time writes a (run, step) (:class:`~pipelines.warehouse.locks.StepLock`)."""
        tx = Transaction(self, check_run_id(run_id), check_run_id(step, "step"))
        with StepLock(self.root, run_id, step):
            publish.recover(self, run_id, step)  # a killed attempt's branches; others' half-done publications
            self._remove_staged_documents(run_id, step)
            try:
                yield tx
                committed = [(table, *self._commit(table, run_id, step, writer))
                             for table, writer in tx.writers.items()]
                committed += [(table, sid, rows) for table, (sid, rows) in tx.written.items()]
                if committed:
                    publish.publish(self, run_id, step, committed)
                for name, path in tx.documents.items():
                    self._publish_documents(path, self.partition_dir(name, run_id))
            except BaseException:
                for writer in tx.writers.values():
                    writer.abort()
                publish.abandon(self, run_id, step)
                raise
            finally:
                for path in tx.documents.values():
                    shutil.rmtree(path, ignore_errors=True)
        self.runs.record_step(run_id, step)

    def write_table(self, table: str, run_id: str, data: pa.Table, schema: pa.Schema | None = None,
                    step: str = "main") -> None:
        """``data`` as run ``run_id``'s partition of ``table``, in a step of its own."""
        with self.transaction(run_id, step) as tx:
            tx.write(table, data, schema)
            tx.writer(table, schema)  # an empty table still gets its (empty) partition

    def partition(self, table: str, run_id: str, step: str) -> dict[str, str]:
        """The values of ``table``'s partition columns for a step of a run."""
        values = {schemas.RUN_ID: run_id, schemas.STEP: step}
        return {name: values[name] for name in schemas.partition_columns(table)}

    def _commit(self, table: str, run_id: str, step: str, writer: TableWriter) -> tuple[int, int]:
        """Replaces the run's partition of ``table`` with the data files ``writer`` wrote, in one
        table transaction on the step's branch (set to ``main``: one snapshot,
        :mod:`.partition_commit`), retried on a conflicting commit of another writer:
        (snapshot id, rows). No rows where no snapshot holds the run's partition: no commit
        (:meth:`_nothing_written`)."""
        from pyiceberg.exceptions import CommitFailedException

        if writer.rows == 0 and self._unpublished(table, run_id):
            writer.abort()  # (a file of no rows, if one was written)
            return self._nothing_written(table, writer.schema)
        files = writer.close()
        branch = publish.note(self, table, run_id, step)
        partition = self.partition(table, run_id, step)
        for attempt in range(publish.TRIES):
            ice = self.table(table, writer.schema)
            txn = publish.transaction(ice)
            with warnings.catch_warnings():  # "did not match any records": a first write of the run
                warnings.simplefilter("ignore", UserWarning)
                publish.stage_branch(txn, branch)  # the step's branch of the table, at main
                old = partition_commit.partition_files(txn, ice.io, branch, partition)
                if old is None:  # files not of the partition alone: pyiceberg's delete rewrites them
                    txn.delete(partition_commit.partition_filter(partition), branch=branch)
                    old = []
            partition_commit.replace(txn, branch, old, files)
            try:
                done = publish.commit(txn)
            except CommitFailedException as err:
                publish.retry(attempt, err)
                continue
            return done.metadata.refs[branch].snapshot_id, writer.rows
        raise AssertionError("unreachable")

    def write_spark(self, tx: Transaction, table: str, df, append: bool = False, empty: bool = False) -> None:
        """Spark's write of ``table`` (``df`` of its declared columns) in step ``tx``: one commit
        through iceberg-spark-runtime that replaces the run's partition with ``df``, or with
        ``append`` adds ``df`` to what this step wrote to it before. The executors write the
        data files to the table's location; the driver commits. The snapshot is the step's to
        record at its end (:meth:`transaction`): until then no ledger row names it, no reader sees it.
        ``empty``: ``df`` has no rows by its plan (:func:`pipelines.spark.io.known_empty`); no
        commit when it would change nothing (:meth:`_nothing_written`)."""
        opened = tx.written.get(table, (None,))[0] is not None  # the step's branch of the table has its rows
        if empty and opened and append:  # nothing added to the step's rows
            return
        if empty and not opened and self._unpublished(table, tx.run_id):
            tx.written[table] = self._nothing_written(table)
            return
        appended = append and opened
        name = publish.branch(tx.run_id, tx.step) if opened else publish.open_branch(self, table, tx.run_id, tx.step)
        sid, added = self._spark_commit(table, df, tx.run_id, tx.step, name, appended)
        tx.written[table] = (sid, (tx.written[table][1] if appended else 0) + added)

    def _unpublished(self, table: str, run_id: str) -> bool:
        """No snapshot holds rows of run ``run_id``'s ``table``: a write of no rows replaces nothing."""
        return self.written(table, run_id)[1] is None

    def _nothing_written(self, table: str, declared: pa.Schema | None = None) -> tuple[None, int]:
        """A step's write of no rows where no snapshot holds rows of the run's partition: no
        commit, no branch; the ledger row names no snapshot (the run wrote the table, and
        there is nothing to read). The table is created if it does not exist yet (dbt's sources,
        analysts' queries name it)."""
        self.table(table, declared)
        return None, 0

    def _spark_commit(self, table: str, df, run_id: str, step: str, branch: str,
                      append: bool = False) -> tuple[int, int]:
        """One commit of ``df`` to ``table`` (created by pyiceberg with the declared mapping, see
        :func:`~pipelines.warehouse.iceberg.publish.open_branch`) through iceberg-spark-runtime,
        on the step's ``branch``: the run's (and step's) partition overwritten, or ``append``ed
        to; (snapshot id, rows added), the snapshot found again by a token in its summary."""
        from pyspark.sql import functions as F

        from pipelines.warehouse.iceberg.catalog import bind_catalog

        # (a session that served another warehouse writes to this one)
        bind_catalog(df.sparkSession, self.catalog_config)
        ident = self.spark_identifier(table)
        token = uuid.uuid4().hex
        cond = None
        for name, value in self.partition(table, run_id, step).items():
            df = df.withColumn(name, F.lit(value))
            term = F.col(name) == F.lit(value)
            cond = term if cond is None else cond & term
        writer = df.writeTo(f"{ident}.`branch_{branch}`").option(f"snapshot-property.{TOKEN}", token)
        if append:
            writer.append()
        else:
            writer.overwrite(cond)
        return self._token_snapshot(table, token)

    def _token_snapshot(self, table: str, token: str) -> tuple[int, int]:
        """(snapshot id, rows added) of the commit to ``table`` whose summary holds ``token``, in
        the table's metadata as pyiceberg loads it (newest first): a Spark query of its
        ``snapshots`` table would be a job per write. The loaded table serves the reads at it."""
        ice = self._loaded[table] = self.catalog.load_table(self.ident(table))
        for snap in reversed(ice.metadata.snapshots):
            if snap.summary is not None and snap.summary.get(TOKEN) == token:
                return snap.snapshot_id, int(snap.summary.get("added-records") or 0)
        raise RuntimeError(f"{self.spark_identifier(table)}: the snapshot of this commit (token {token}) "
                           "is not in its history")

    def record(self, run_id: str, step: str, committed: list[tuple[str, int, int]]) -> None:
        """The step's ledger rows (table, snapshot id, rows), one append: from now on its tables are
        visible. Steps that commit through the warehouse record on publishing; dbt, which commits
        through Spark, records its tables after a successful build (``pipelines.transform.iceberg_ledger``)."""
        now = datetime.now(UTC)
        data = pa.table({
            "step": [step] * len(committed), "table_name": [t for t, _, _ in committed],
            "snapshot_id": [s for _, s, _ in committed], "rows": [r for _, _, r in committed],
            "committed_at": pa.array([now] * len(committed), pa.timestamp("ms", tz="UTC")),
        }, schema=LEDGER_SCHEMA)
        from pyiceberg.exceptions import CommitFailedException

        data = schemas.to_write(LEDGER, data, {schemas.RUN_ID: run_id}, LEDGER_SCHEMA)
        for attempt in range(publish.TRIES):
            txn = publish.transaction(self.table(LEDGER, LEDGER_SCHEMA))
            txn.append(data)
            publish.stage_expiry(txn)
            try:
                self._recorded(run_id, publish.commit(txn), data)
                return
            except CommitFailedException as err:
                publish.retry(attempt, err)

    def _recorded(self, run_id: str, ledger, data: pa.Table) -> None:
        """The run's ledger rows as read before plus ``data``, the rows this append added, when
        nothing else was appended since they were read (the append's parent is the snapshot
        they were read at): the step's own reads after its publication (the quarantine's
        lines, the next step's checks) then scan the ledger no more."""
        self._loaded[LEDGER] = ledger
        cached, head = self._ledger_cache.get(run_id), ledger.current_snapshot()
        if cached is None or head is None or head.parent_snapshot_id != cached[0]:
            return
        rows = cached[1]
        self._ledger_cache[run_id] = (head.snapshot_id,
                                      pa.concat_tables([rows, data.select(rows.schema.names).cast(rows.schema)]))

    # -- a run's documents (files, not tables) and run metadata ----------------------------------
    def partition_dir(self, name: str, run_id: str) -> Path:
        """The local directory of run ``run_id``'s documents ``name`` (``validation``, ``reports``,
        ``runs``, ``dbt/target``)."""
        return self.root / name / f"run_id={check_run_id(run_id)}"

    def table_dir(self, name: str) -> Path:
        """The local directory of every run's documents ``name``."""
        return self.root / name

    def staging_path(self, name: str, run_id: str, step: str) -> Path:
        """A fresh hidden directory (not made yet) beside ``name``'s runs for a step's documents
        before their rename."""
        return self.root / name / f"{STAGING}{run_id}.{step}.{uuid.uuid4().hex[:8]}"

    def _remove_staged_documents(self, run_id: str, step: str) -> None:
        """What a killed attempt of the step left before renaming its documents."""
        if self.root.is_dir():
            for path in self.root.glob(f"*/{STAGING}{run_id}.{step}.*"):
                shutil.rmtree(path, ignore_errors=True)

    @staticmethod
    def _publish_documents(staged: Path, final: Path) -> None:
        """``staged`` renamed to ``final`` (a previous attempt's documents replaced whole)."""
        old = None
        if final.exists():
            old = final.with_name(f".replaced-{final.name}-{uuid.uuid4().hex[:8]}")
            os.rename(final, old)
        os.rename(staged, final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

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


def spark_identifier(table: str, namespace: tuple[str, ...] = ()) -> str:
    from pipelines.warehouse.iceberg.catalog import SPARK_CATALOG

    return ".".join((SPARK_CATALOG, *namespace, *schemas.identifier(table)))
