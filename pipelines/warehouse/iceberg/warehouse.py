"""A warehouse whose tables are Apache Iceberg tables of one catalog (``warehouse.format: iceberg``).

It keeps :class:`~pipelines.warehouse.directory.Warehouse`'s interface for the steps: a step's
Arrow writers stage its tables in a local directory (``<root>/<layer>/<table>/.staging.*``,
exactly as for the Parquet layout) and, when the step ends without error, the staged rows are
committed instead of renamed:

1. each table gets **one Iceberg commit** on the step's own branch ``kaudit_<run>_<step>``
   (set to the table's ``main``): the run's partition (``run_id``, and ``step`` in a shared
   table) deleted and the staged rows appended, in one table transaction, by pyiceberg from
   Arrow batches read from the staged files (no JVM).
   A Spark step (the build) stages nothing on the local disk: each of its writes of a table is
   a commit of its own on the step's branch through ``iceberg-spark-runtime``
   (``DataFrameWriterV2``: the run's partition overwritten, or appended to by a later write of
   the step), the executors writing the data files straight to the tables' location, so a
   Spark cluster needs no mount it shares with the driver (:meth:`IcebergWarehouse.write_spark`).
   Until the step is published those snapshots are its staging: no reader sees them, neither
   kaudit's (by the ledger) nor an engine reading a table's current state (``main``).
2. then the step is published (:mod:`pipelines.warehouse.iceberg.publish`): one append to the
   ledger table ``meta.commits`` records the snapshot id of each table of the step (the step's
   single point of publication), then each table's ``main`` is fast-forwarded to it and the
   branch removed; a publication a kill cut short is completed by the next step.

Readers go through the ledger (:meth:`IcebergWarehouse.snapshot_id`): a run's table is read at
the snapshot its last step recorded, filtered to its partition: a time-travel read. A step
killed before its ledger append leaves table snapshots nobody's ledger row names (not visible);
running the step again replaces its partitions and records new snapshots. Iceberg has no
transaction over several tables in a SQL catalog; the ledger is what makes a step's tables
visible together.

Locks (one writer per run and step), the run records (``runs.jsonl``, ``runs/``) and Spark's
and dbt's working files stay in the local directory ``root``; the tables' data and metadata go
to the catalog's location (``root`` itself by default, or ``s3a://bucket/prefix``). So do a
run's documents (a staged name without a layer: ``validation``'s results.json and failing rows,
``reports``' page, summary and findings): they are files, not tables, and are published as in
the Parquet layout, renamed into ``root/<name>/run_id=<id>/`` once the step's tables and its
ledger row are committed.

Reads go through the ledger many times per step (every table a report or a validation reads):
the ledger is loaded again only when the catalog's row of it names another metadata file (one
indexed SQL query; a commit writes a new one), its rows of a run scanned once per ledger
snapshot; a table's metadata is loaded again only when it does not hold the snapshot to read,
and a row count is counted once per (table, snapshot, run): a snapshot id names one immutable
state.
"""

from __future__ import annotations

import threading
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute
import pyarrow.parquet as pq

from pipelines.warehouse.directory import StepLock, Transaction, Warehouse
from pipelines.warehouse.iceberg import partition_commit, publish, schemas
from pipelines.warehouse.iceberg.catalog import CatalogConfig
from pipelines.warehouse.runs import check_run_id

LEDGER = "meta/commits"
LEDGER_SCHEMA = pa.schema([
    ("step", pa.string()),
    ("table_name", pa.string()),
    ("snapshot_id", pa.int64()),
    ("rows", pa.int64()),
    ("committed_at", pa.timestamp("ms", tz="UTC")),
])
_OPENING = threading.Lock()  # one thread at a time opens a warehouse's catalog
_CREATING = threading.Lock()  # one thread at a time creates tables (Spark's writes run side by side)
BATCH_ROWS = 1 << 20  # rows per Arrow batch read from a staged file and appended


@dataclass
class IcebergTransaction(Transaction):
    """A step's transaction; ``written``: the tables Spark wrote in it, each with the snapshot its
    last write committed (a snapshot no ledger row names until the step ends) and the rows the
    step's writes of it added."""

    written: dict[str, tuple[int, int]] = field(default_factory=dict)


def _staged_tables(table: str, files: list[Path], partition: dict[str, str],
                   declared: pa.Schema) -> Iterator[pa.Table]:
    """The staged rows of ``table``, a batch at a time, as its Iceberg table takes them."""
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
            data = pa.Table.from_batches([batch])
            data = data.select(declared.names).cast(declared) if not data.schema.equals(declared) else data
            yield schemas.to_write(table, data, partition, declared)


def _parquet_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if not p.name.startswith((".", "_"))) if path.is_dir() else []


class IcebergWarehouse(Warehouse):
    """The warehouse of ``root`` (local) with its tables in the Iceberg catalog ``catalog``."""

    format = "iceberg"

    def __init__(self, root, location: str | None = None, catalog: str | None = None,
                 namespace: tuple[str, ...] = ()):
        super().__init__(root)
        self.catalog_config = CatalogConfig.for_warehouse(self.root, location, catalog)
        self.namespace = namespace  # before every table's layer: a named cluster's tables (pipelines.clusters)
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
        ident = self.ident(table)
        cat = self.catalog
        if cat.table_exists(ident):
            return cat.load_table(ident)
        schema = schemas.iceberg_schema(table, declared if declared is not None else self._declared(table))
        with _CREATING:
            self._namespace(ident[:-1])
            try:
                return cat.create_table(ident, schema=schema, partition_spec=schemas.partition_spec(schema, table),
                                        location="/".join((self.catalog_config.location, *ident)),
                                        properties={"write.parquet.compression-codec": "zstd"})
            except Exception:
                if cat.table_exists(ident):  # another writer created it first
                    return cat.load_table(ident)
                raise

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
    def _declared(table: str) -> pa.Schema:
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

    def snapshot_id(self, table: str, run_id: str) -> int | None:
        return self.written(table, run_id)[1]

    def _committed_at(self, table: str, snapshot_id: int) -> int:
        snap = self._load(table, snapshot_id).snapshot_by_id(snapshot_id)
        return snap.timestamp_ms if snap is not None else 0

    def exists(self, table: str, run_id: str) -> bool:
        return self.written(table, run_id)[0]

    def run_ids(self, table: str) -> list[str]:
        if not self.catalog.table_exists(self.ident(LEDGER)):
            return []
        rows = self.catalog.load_table(self.ident(LEDGER)).scan(selected_fields=("run_id", "table_name"))
        data = rows.to_arrow()
        return sorted(set(data.filter(pa.compute.equal(data["table_name"], table))["run_id"].to_pylist()))

    def read_arrow(self, table: str, run_id: str, declared: pa.Schema | None = None,
                   columns: list[str] | None = None) -> pa.Table:
        """Run ``run_id``'s rows of ``table`` as its declared Arrow schema (only ``columns``, in
        that order, when given), read at the snapshot the ledger recorded (empty when no step of
        the run wrote it)."""
        from pyiceberg.expressions import EqualTo

        declared = declared if declared is not None else self._declared(table)
        if columns is not None:
            declared = pa.schema([declared.field(c) for c in columns])
        sid = self.snapshot_id(table, run_id)
        if sid is None:
            return pa.Table.from_batches([], declared)
        scan = self._load(table, sid).scan(row_filter=EqualTo(schemas.RUN_ID, run_id), snapshot_id=sid,
                                           selected_fields=tuple(declared.names) or ("*",))
        return schemas.to_declared(table, scan.to_arrow(), declared)

    def read_step(self, table: str, run_id: str, step: str) -> pa.Table:
        """The rows ``step`` of run ``run_id`` wrote to the shared ``table`` (its own partition)."""
        from pyiceberg.expressions import And, EqualTo

        sid = self.snapshot_id(table, run_id)
        declared = self._declared(table)
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

    def settle(self, run_id: str, wait: float = 30.0) -> None:
        """Nothing to finish: a step's tables are visible once its ledger row is (see the module)."""

    # -- writes ----------------------------------------------------------------------------
    @contextmanager
    def transaction(self, run_id: str, step: str = "main") -> Iterator[Transaction]:
        """Stage the step's tables locally; commit each as one Iceberg snapshot on the step's
        branch, then publish them (the ledger row naming them all, ``main`` fast-forwarded), then
        its documents (staged names without a layer), when the block ends without error (nothing
        on error: the step's branches are removed)."""
        import shutil

        tx = IcebergTransaction(self, check_run_id(run_id), check_run_id(step, "step"))
        with StepLock(self.root, run_id, step):
            self._recover(run_id, step)  # a killed writer's staging dirs
            publish.recover(self, run_id, step)  # and its branches; others' half-done publications
            try:
                yield tx
                for w in tx.writers.values():
                    w.close()
                committed = [(table, *self._commit(table, run_id, step, path, tx))
                             for table, path in tx.staged.items() if is_table(table)]
                committed += [(table, sid, rows) for table, (sid, rows) in tx.written.items()]
                if committed:
                    publish.publish(self, run_id, step, committed)
                for name, path in tx.staged.items():
                    if not is_table(name):
                        self._publish(path, self.partition_dir(name, run_id))
            except BaseException:
                for w in tx.writers.values():
                    if w._writer is not None:
                        w._writer.close()
                publish.abandon(self, run_id, step)
                raise
            finally:
                for path in tx.staged.values():
                    shutil.rmtree(path, ignore_errors=True)
        self.runs.record_step(run_id, step)

    def _partition(self, table: str, run_id: str, step: str) -> dict[str, str]:
        values = {schemas.RUN_ID: run_id, schemas.STEP: step}
        return {name: values[name] for name in schemas.partition_columns(table)}

    def _commit(self, table: str, run_id: str, step: str, staged: Path, tx: Transaction) -> tuple[int, int]:
        """Replaces the run's partition of ``table`` with the staged rows: (snapshot id, rows)."""
        declared = tx.writers[table].schema if table in tx.writers else self._declared(table)
        files = _parquet_files(staged)
        spark = _active_spark()
        if spark is not None and table not in tx.writers:
            return self._commit_spark(spark, table, run_id, step, files, declared)
        name = publish.note(self, table, run_id, step)
        return self._commit_arrow(table, self._partition(table, run_id, step), files, declared, name)

    def _commit_arrow(self, table: str, partition: dict[str, str], files: list[Path],
                      declared: pa.Schema, branch: str) -> tuple[int, int]:
        """pyiceberg: one table transaction on the step's ``branch`` (set to ``main``, the
        partition's rows replaced by the batches: one snapshot, :mod:`.partition_commit`),
        retried on a conflicting commit of another writer."""
        from pyiceberg.exceptions import CommitFailedException

        where = partition_commit.partition_filter(partition)
        for attempt in range(publish.TRIES):
            ice = self.table(table, declared)
            txn = ice.transaction()
            with warnings.catch_warnings():  # "did not match any records": a first write of the run
                warnings.simplefilter("ignore", UserWarning)
                publish.stage_branch(txn, branch)  # the step's branch of the table, at main
                old = partition_commit.partition_files(txn, ice.io, branch, partition)
                if old is None:  # files not of the partition alone: pyiceberg's delete rewrites them
                    txn.delete(where, branch=branch)
            tables = _staged_tables(table, files, partition, declared)
            if old is not None:
                rows = partition_commit.replace(txn, ice.io, branch, old, tables)
            else:
                rows = 0
                for data in tables:
                    txn.append(data, branch=branch)
                    rows += data.num_rows
            try:
                done = txn.commit_transaction()
            except CommitFailedException as err:
                publish.retry(attempt, err)
                continue
            return done.metadata.refs[branch].snapshot_id, rows
        raise AssertionError("unreachable")

    def _commit_spark(self, spark, table: str, run_id: str, step: str, files: list[Path],
                      declared: pa.Schema) -> tuple[int, int]:
        """Spark through iceberg-spark-runtime: the partition overwritten by the staged rows in
        one commit; the snapshot found again by the token in its summary."""
        from pipelines.spark.schemas import empty_frame, table_schema

        if files:
            df = spark.read.schema(table_schema(table)).parquet(*[str(f) for f in files])
        else:
            df = empty_frame(spark, table_schema(table))  # (no Python workers)
        name = publish.open_branch(self, table, run_id, step, declared)
        return self._spark_commit(table, df, run_id, step, name)

    def write_spark(self, tx: IcebergTransaction, table: str, df, append: bool = False) -> None:
        """Spark's write of ``table`` (``df`` of its declared columns) in step ``tx``: one commit
        through iceberg-spark-runtime that replaces the run's partition with ``df``, or with
        ``append`` adds ``df`` to what this step wrote to it before. The executors write the
        data files to the table's location; the driver commits. The snapshot is the step's to
        record at its end (:meth:`transaction`): until then no ledger row names it, no reader sees it."""
        appended = append and table in tx.written
        name = publish.branch(tx.run_id, tx.step) if table in tx.written else \
            publish.open_branch(self, table, tx.run_id, tx.step)
        sid, added = self._spark_commit(table, df, tx.run_id, tx.step, name, appended)
        tx.written[table] = (sid, (tx.written[table][1] if appended else 0) + added)

    def _spark_commit(self, table: str, df, run_id: str, step: str, branch: str,
                      append: bool = False) -> tuple[int, int]:
        """One commit of ``df`` to ``table`` (created by pyiceberg with the declared mapping, see
        :func:`~pipelines.warehouse.iceberg.publish.open_branch`) through iceberg-spark-runtime,
        on the step's ``branch``: the run's (and step's) partition overwritten, or ``append``ed
        to; (snapshot id, rows added), the snapshot found again by a token in its summary."""
        from pyspark.sql import functions as F

        ident = self.spark_identifier(table)
        token = uuid.uuid4().hex
        cond = None
        for name, value in self._partition(table, run_id, step).items():
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

        for attempt in range(publish.TRIES):
            try:
                self.table(LEDGER, LEDGER_SCHEMA).append(schemas.to_write(LEDGER, data, {schemas.RUN_ID: run_id},
                                                                          LEDGER_SCHEMA))
                return
            except CommitFailedException as err:
                publish.retry(attempt, err)

    # the Parquet layout's publish machinery has nothing to do here
    def _roll_forward(self, run_id: str, moves: list[list[str]]) -> None:
        raise NotImplementedError("an Iceberg warehouse publishes by commits, not renames")


TOKEN = "kaudit.commit-token"


def is_table(name: str) -> bool:
    """A staged name is a table (``<layer>/<name>``, committed to the catalog), or a run's
    documents (``validation``, ``reports``: files published into the local directory)."""
    return "/" in name


def spark_identifier(table: str, namespace: tuple[str, ...] = ()) -> str:
    from pipelines.warehouse.iceberg.catalog import SPARK_CATALOG

    return ".".join((SPARK_CATALOG, *namespace, *schemas.identifier(table)))


def _active_spark():
    """The process's active Spark session, if a step started one (without importing pyspark)."""
    import sys

    if "pyspark" not in sys.modules:
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()
