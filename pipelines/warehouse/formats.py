"""The warehouse's two formats and the one place that opens either: a Parquet directory
(:class:`~pipelines.warehouse.directory.Warehouse`) or Iceberg tables
(:class:`~pipelines.warehouse.iceberg.warehouse.IcebergWarehouse`)."""

from __future__ import annotations

import os

from pipelines.errors import UsageError
from pipelines.warehouse.directory import DEFAULT_ROOT, Warehouse

FORMATS = ("parquet", "iceberg")


def open_warehouse(location: str | os.PathLike = DEFAULT_ROOT, fmt: str = "parquet", catalog: str | None = None,
                   local: str | os.PathLike | None = None) -> Warehouse:
    """The warehouse at ``location`` in format ``fmt`` (``FORMATS``). Parquet: ``location`` is
    its directory. Iceberg: ``location`` is a directory or an object-store URI
    (``s3a://bucket/prefix``) for the tables' files, ``catalog`` the catalog's URI (default: a
    SQLite file beside the directory), ``local`` the directory of its locks, run records and
    staging (default: ``location`` when it is a directory; required for a URI)."""
    if fmt not in FORMATS:
        raise UsageError(f"warehouse format {fmt!r}: expected one of {', '.join(FORMATS)}")
    text = str(location)
    is_uri = "://" in text
    if fmt == "parquet":
        if is_uri or catalog is not None:
            raise UsageError("a Parquet warehouse is a local directory without a catalog: "
                             "use --warehouse-format iceberg for an object-store URI or a --catalog")
        return Warehouse(location)
    from pipelines.warehouse.iceberg.warehouse import IcebergWarehouse

    if is_uri and local is None:
        raise UsageError(f"--warehouse {text}: an object-store warehouse needs a local directory for its "
                         "run records and staging (--warehouse-local DIR)")
    return IcebergWarehouse(local if is_uri else location, location=text if is_uri else None, catalog=catalog)
