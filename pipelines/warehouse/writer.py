"""A step's writes: Arrow batches straight into Iceberg data files at the tables' location.

A step's :class:`Transaction` (``Warehouse.transaction``) hands out one :class:`TableWriter` per
table. The writer buffers the batches it is given up to :data:`FLUSH_BYTES` of Arrow memory, then
writes them as Iceberg data files (Parquet, zstd, with Iceberg's field ids and column metrics)
under the table's location, in the directory of the run's partition
(``<location>/<layer>/<name>/data/run_id=<id>/``), through pyiceberg's ``FileIO``: the same code
for a local directory, ``s3a://`` and ``hdfs://``. Nothing is written twice and no local
staging directory is involved; memory holds one buffer per table.

Worker processes (the offsets extract decodes segments in several) write their parts the same
way: :class:`DataFileTarget` is a small picklable description of where and how (the directory,
the Arrow schema with field ids, the FileIO's properties); the worker returns the paths and the
step's writer takes them (:meth:`TableWriter.add_files`), reading only their footers.

The files become visible only when the step commits them (one overwrite snapshot per table on
the step's branch, then the ledger row: :mod:`pipelines.warehouse.iceberg.publish`). A step that
fails deletes the files it wrote; a step killed before its commit leaves data files no snapshot
references: invisible to every reader (Iceberg reads only the files a snapshot's manifests
list), removed by Iceberg's orphan-file cleanup (``CALL kaudit.system.remove_orphan_files``,
docs/warehouse.md).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.warehouse.iceberg import schemas

FLUSH_BYTES = 128 << 20  # Arrow bytes a writer buffers before it writes them as data files
FIELD_ID = b"PARQUET:field_id"


class _ChosenStatistics(logging.Filter):
    """pyiceberg warns of every column of a data file written without Parquet statistics; a
    writer keeps them only for the columns readers prune on (``statistics``), so that warning
    says nothing a user should act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("PyArrow statistics missing")


logging.getLogger("pyiceberg.io.pyarrow").addFilter(_ChosenStatistics())


def _with_ids(arrow: pa.Schema, ids: pa.Schema) -> pa.Schema:
    """``arrow``'s fields (a dictionary-encoded column stays so) with the field ids of ``ids``
    (:meth:`TableWriter.target`'s schema: a nested column's children carry their own ids)."""
    fields = []
    for f in arrow:
        want = ids.field(f.name)
        fields.append(pa.field(f.name, f.type, nullable=want.nullable, metadata={FIELD_ID: want.metadata[FIELD_ID]}))
    return pa.schema(fields)


@dataclass(frozen=True)
class DataFileTarget:
    """Where a process writes data files of one table's partition, and the schema they have."""

    table: str
    directory: str  # <table location>/data/<partition path>
    schema: pa.Schema  # the table's Arrow write schema with Iceberg's field ids
    partition: tuple[tuple[str, str], ...]  # (column, value) of the partition, in the table's order
    io_properties: tuple[tuple[str, str], ...]

    def write(self, data: pa.Table, name: str, **parquet_options) -> str:
        """``data`` (the table's declared columns; dictionary-encoded ones kept as they are) as
        one data file ``<directory>/<name>-<uuid>.parquet``; its path. ``parquet_options``:
        pyarrow's ``write_table`` options; a list of ``use_dictionary`` or ``write_statistics``
        columns gets the partition columns too (one value each; the statistics of ``run_id``
        are how the commit reads the file's partition)."""
        from pyiceberg.io import load_file_io

        cols = []
        for f in data.schema:
            want = self.schema.field(f.name).type
            column = data.column(f.name)
            cols.append(column if pa.types.is_dictionary(f.type) or f.type == want else column.cast(want))
        zeros = pa.array(np.zeros(data.num_rows, np.int32))
        for _, value in self.partition:  # one value: a dictionary of it (Parquet writes it as one)
            cols.append(pa.DictionaryArray.from_arrays(zeros, pa.array([value], pa.string())))
        names = [*data.column_names, *(c for c, _ in self.partition)]
        arrow = pa.schema([pa.field(n, c.type) for n, c in zip(names, cols, strict=True)])
        table = pa.Table.from_arrays(cols, schema=_with_ids(arrow, self.schema))
        options = {"compression": "zstd", "use_dictionary": True, **parquet_options}
        for key in ("use_dictionary", "write_statistics"):
            if isinstance(options.get(key), list | tuple):
                options[key] = [*options[key], *(c for c, _ in self.partition)]
        path = f"{self.directory}/{name}-{uuid.uuid4().hex}.parquet"
        io = load_file_io(dict(self.io_properties), path)
        with io.new_output(path).create(overwrite=True) as out:
            pq.write_table(table, out, store_schema=False, **options)
        return path


class TableWriter:
    """Streams record batches of one table of a step into Iceberg data files (module docstring);
    ``warehouse``: the step's :class:`~pipelines.warehouse.warehouse.Warehouse`.

    ``dictionary``: dictionary-encode every column (default) or only the named ones (unique
    values such as paths or ids only cost time and space in a dictionary). ``statistics``:
    min/max and null counts of every column (default) or only the named ones (long unique
    strings nobody filters on only cost time). ``batch_size``: values the Parquet encoder takes
    per internal step (pyarrow's default 1024)."""

    def __init__(self, warehouse, table: str, schema: pa.Schema, partition: dict[str, str], *,
                 dictionary: bool | list[str] = True, statistics: bool | list[str] = True,
                 batch_size: int | None = None):
        self.warehouse, self.table, self.schema, self.partition = warehouse, table, schema, partition
        self.rows = 0
        self.files: list = []  # pyiceberg DataFiles of the files written so far
        self._paths: list[str] = []  # data files written, turned into DataFiles at close
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._target: DataFileTarget | None = None
        self._options = {"use_dictionary": dictionary, "write_statistics": statistics}
        if batch_size is not None:
            self._options["write_batch_size"] = batch_size

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        if data.num_rows == 0:
            return
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        data = data.select(self.schema.names)
        if not data.schema.equals(self.schema):
            data = data.cast(self.schema)
        self._buffer.append(data)
        self._buffered += data.nbytes
        self.rows += data.num_rows
        if self._buffered >= FLUSH_BYTES:
            self._flush()

    def target(self) -> DataFileTarget:
        """Where this writer, or another process (:meth:`add_files`), writes data files of the
        table's partition for the step."""
        from pyiceberg.io.pyarrow import schema_to_pyarrow
        from pyiceberg.typedef import Record

        if self._target is not None:
            return self._target
        ice = self.warehouse.table(self.table, self.schema)
        meta = ice.metadata
        names = schemas.partition_columns(self.table)
        path = meta.spec().partition_to_path(Record(*[self.partition[n] for n in names]), meta.schema())
        ids = schema_to_pyarrow(meta.schema(), include_field_ids=True)  # (strings as large_string)
        fields = [pa.field(f.name, ids.field(f.name).type if pa.types.is_nested(f.type) else f.type, f.nullable,
                           ids.field(f.name).metadata) for f in schemas.write_schema(self.table, self.schema)]
        self._target = DataFileTarget(self.table, f"{ice.location().rstrip('/')}/data/{path}", pa.schema(fields),
                                      tuple((n, self.partition[n]) for n in names),
                                      tuple(sorted(ice.io.properties.items())))
        return self._target

    def add_files(self, paths: list[str], rows: int) -> None:
        """Data files of ``rows`` rows in all that another process wrote through :meth:`target`."""
        self._paths += paths
        self.rows += rows

    def _flush(self) -> None:
        if not self._buffer:
            return
        data = pa.concat_tables(self._buffer)
        self._buffer, self._buffered = [], 0
        self._paths.append(self.target().write(data, f"part-{len(self._paths):05d}", **self._options))

    def close(self) -> list:
        """Writes what is buffered; every data file of the step's rows of the table (DataFiles,
        from the files' footers)."""
        from pyiceberg.io.pyarrow import parquet_file_to_data_file

        self._flush()
        if self._paths:
            ice = self.warehouse.table(self.table, self.schema)
            self.files += [parquet_file_to_data_file(ice.io, ice.metadata, p) for p in self._paths]
            self._paths = []
        return self.files

    def abort(self) -> None:
        """The step failed: its buffer dropped, the data files it wrote deleted (none is referenced)."""
        self._buffer, self._buffered = [], 0
        paths = [f.file_path for f in self.files] + self._paths
        if not paths:
            return
        io = self.warehouse.table(self.table, self.schema).io
        for p in paths:
            try:
                io.delete(p)
            except (OSError, FileNotFoundError):
                pass


@dataclass
class Transaction:
    """One step's writes (``Warehouse.transaction``): its tables' writers, the tables Spark wrote
    (``written``: the snapshot each one's last write committed on the step's branch, and the
    rows the step added) and its documents (``staging_dir``: files, not tables)."""

    warehouse: object  # the step's pipelines.warehouse.warehouse.Warehouse
    run_id: str
    step: str = "main"
    writers: dict[str, TableWriter] = field(default_factory=dict)
    written: dict[str, tuple[int | None, int]] = field(default_factory=dict)
    documents: dict[str, Path] = field(default_factory=dict)

    def writer(self, table: str, schema: pa.Schema | None = None, **options) -> TableWriter:
        """The table's writer (made on first use; ``options``: :class:`TableWriter`'s); a table the
        step makes a writer of is recorded even with no rows: its partition of the run is then empty
        (an earlier attempt's rows replaced; no commit at all where no snapshot holds any)."""
        if table not in self.writers:
            declared = schema if schema is not None else self.warehouse.declared(table)
            self.writers[table] = TableWriter(self.warehouse, table, declared,
                                              self.warehouse.partition(table, self.run_id, self.step), **options)
        return self.writers[table]

    def write(self, table: str, data: pa.Table, schema: pa.Schema | None = None) -> None:
        self.writer(table, schema).write(data)

    def staging_dir(self, name: str) -> Path:
        """A fresh local directory for the run's documents ``name`` (``validation``, ``reports``:
        files, not tables), renamed into ``<root>/<name>/run_id=<id>/`` once the step's tables
        are committed and published."""
        if "/" in name:
            raise ValueError(f"{name} is a table: write it through writer() or write_spark(), not a directory")
        if name not in self.documents:
            self.documents[name] = self.warehouse.staging_path(name, self.run_id, self.step)
        return self.documents[name]
