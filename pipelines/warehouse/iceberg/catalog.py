"""The Iceberg catalog of a warehouse, opened the same way by pyiceberg and by Spark.

The embedded default is a SQL catalog in a SQLite file beside the warehouse directory
(``<warehouse>.catalog.db``): no server. pyiceberg's ``SqlCatalog`` and Iceberg's Java
``JdbcCatalog`` keep the same table, ``iceberg_tables`` (catalog name, namespace, table name,
metadata location, previous metadata location), so a table the extract commits through
pyiceberg is the table Spark reads through ``jdbc:sqlite:`` and vice versa; both sides use the
catalog name ``kaudit`` (a row of that table belongs to one catalog name).

``--catalog`` takes a SQLAlchemy/JDBC-style URI of a SQL catalog: ``sqlite:///path`` (or a
bare path) for another SQLite file, ``postgresql://user:pass@host:port/db`` for a team's
PostgreSQL (pyiceberg's ``sql-postgres`` extra and the PostgreSQL JDBC driver on Spark's
classpath).

Table data lives under the *location* (the warehouse directory itself by default, or an
object-store URI such as ``s3a://bucket/prefix``): ``<location>/<layer>/<name>/``.
For S3 the endpoint and credentials come from the environment as AWS tools read them
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``);
paths are addressed path-style (a bucket name is not a host name on a private server).
On HDFS (``hdfs://namenode:port/prefix``) pyiceberg reads and writes over the namenode's
WebHDFS (:mod:`pipelines.warehouse.iceberg.webhdfs`) and Spark through Hadoop's HDFS client,
Iceberg's default ``HadoopFileIO``.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

NAME = "kaudit"
SPARK_CATALOG = NAME  # the Spark catalog name: tables are kaudit.<layer>.<name>
OBJECT_STORES = ("s3", "s3a", "s3n")
HDFS = "hdfs"  # pyiceberg over WebHDFS (pipelines/warehouse/iceberg/webhdfs.py), Spark over Hadoop's client
SDK_ENV = ("AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION")


def is_uri(location: str) -> bool:
    return "://" in location


@dataclass(frozen=True)
class CatalogConfig:
    """Where the catalog's rows live (``uri``) and where its tables' files go (``location``)."""

    uri: str  # sqlite:////abs/path.db or postgresql://...
    location: str  # file:///abs/dir or s3a://bucket/prefix

    @classmethod
    def for_warehouse(cls, root: Path, location: str | None = None, catalog: str | None = None) -> CatalogConfig:
        """The catalog of the warehouse whose local directory is ``root`` (locks, run records,
        staging); ``location`` None keeps the tables' files there too; ``catalog`` None is the
        SQLite file beside ``root``."""
        root = Path(root).absolute()
        if catalog is None:
            uri = f"sqlite:///{root.with_name(root.name + '.catalog.db')}"
        elif is_uri(catalog):
            uri = catalog
        else:
            uri = f"sqlite:///{Path(catalog).absolute()}"
        if location is None:
            loc = root.as_uri()
        elif is_uri(location):
            loc = location.rstrip("/")
        else:
            loc = Path(location).absolute().as_uri()
        return cls(uri, loc)

    @property
    def scheme(self) -> str:
        return urlparse(self.location).scheme

    @property
    def sqlite_path(self) -> Path | None:
        return Path(self.uri[len("sqlite:///"):]) if self.uri.startswith("sqlite:///") else None

    def s3_settings(self) -> dict[str, str]:
        """The S3 endpoint, region and credentials from the environment (``{}`` when not on S3)."""
        if self.scheme not in OBJECT_STORES:
            return {}
        env = os.environ
        out = {"region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"}
        for key, var in (("endpoint", "AWS_ENDPOINT_URL"), ("access-key-id", "AWS_ACCESS_KEY_ID"),
                         ("secret-access-key", "AWS_SECRET_ACCESS_KEY")):
            if env.get(var):
                out[key] = env[var]
        return out

    # -- pyiceberg -----------------------------------------------------------------------
    def sqlalchemy_uri(self) -> str:
        """The URI pyiceberg's catalog opens through SQLAlchemy: ``postgresql://`` names the
        driver kaudit installs (psycopg2; SQLAlchemy 2.1's default for it is psycopg 3)."""
        if self.uri.startswith("postgresql://"):
            return "postgresql+psycopg2://" + self.uri[len("postgresql://"):]
        return self.uri

    def pyiceberg_properties(self) -> dict[str, str]:
        props = {"uri": self.sqlalchemy_uri(), "warehouse": self.location, "init_catalog_tables": "true"}
        s3 = self.s3_settings()
        if s3:
            props.update({f"s3.{k}": v for k, v in s3.items()})
            props["s3.force-virtual-addressing"] = "false"
        if self.scheme == HDFS:
            from pipelines.warehouse.iceberg import webhdfs

            props.update(webhdfs.settings(self.location))
        return props

    def open(self):
        """pyiceberg's SQL catalog (its tables created on first use), its tables' metadata files
        read once (:func:`_catalog_class`)."""
        path = self.sqlite_path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        props = self.pyiceberg_properties()
        if self.scheme == HDFS:
            from pipelines.warehouse.iceberg import webhdfs

            webhdfs.check(self.location, props)
        return _catalog_class()(NAME, **props)

    # -- Spark ---------------------------------------------------------------------------
    def jdbc_uri(self) -> str:
        path = self.sqlite_path
        if path is not None:
            return f"jdbc:sqlite:{path}"
        parsed = urlparse(self.uri)
        if parsed.scheme.startswith("postgresql"):
            return f"jdbc:postgresql://{parsed.hostname}:{parsed.port or 5432}{parsed.path}"
        raise ValueError(f"no JDBC form of catalog URI {self.uri!r}")

    def spark_conf(self, jars: list[Path]) -> dict[str, str]:
        """Spark settings that make ``kaudit`` an Iceberg ``SparkCatalog`` over the same catalog
        and locations (``jars``: :func:`pipelines.warehouse.iceberg.jars.paths`)."""
        prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
        conf = {
            "spark.jars": ",".join(str(j) for j in jars),
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            prefix: "org.apache.iceberg.spark.SparkCatalog",
            f"{prefix}.type": "jdbc",
            f"{prefix}.uri": self.jdbc_uri(),
            f"{prefix}.warehouse": self.location,
            # no cache of loaded tables: pyiceberg commits to the same tables in this process
            # (the extract, a test's inputs) and a cached table does not know their snapshots
            f"{prefix}.cache-enabled": "false",
            # a write adds rows to one partition (the run's, or the run's and step's): Iceberg's
            # default for a partitioned table, `hash`, would shuffle every row of a write by that
            # one value into one task (a shuffle stage per write, and at scale all of a table's
            # rows through one writer); `none` writes each task's rows where they are
            "spark.sql.iceberg.distribution-mode": "none",
        }
        parsed = urlparse(self.uri)
        if parsed.username:
            conf[f"{prefix}.jdbc.user"] = parsed.username
        if parsed.password:
            conf[f"{prefix}.jdbc.password"] = parsed.password
        s3 = self.s3_settings()
        if s3:
            conf[f"{prefix}.io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
            conf[f"{prefix}.s3.path-style-access"] = "true"
            conf[f"{prefix}.client.region"] = s3["region"]
            for key in ("endpoint", "access-key-id", "secret-access-key"):
                if key in s3:
                    conf[f"{prefix}.s3.{key}"] = s3[key]
            # the AWS SDK's own settings of kaudit's environment (which checksums an S3-compatible
            # server accepts) go to the executors, whose environment is their worker's
            for var in SDK_ENV:
                if os.environ.get(var):
                    conf[f"spark.executorEnv.{var}"] = os.environ[var]
        return conf


METADATA_CACHE = 256  # metadata files a catalog keeps parsed (a table's current one, and a few before it)


@functools.cache
def _catalog_class():
    """pyiceberg's ``SqlCatalog`` that parses a table's metadata file once: a load is then the
    catalog's row alone. A metadata file is written once under a name of its own and never
    changed (a commit writes a new one and swaps the row to it), so the parsed metadata of a
    location stays that location's; the metadata a commit wrote is kept as it commits. A
    step loads each of its tables several times (its writer, the commit, the publication's
    checks; pyiceberg's commit loads the table again): half of a load's CPU was parsing the
    JSON."""
    from pyiceberg.catalog.sql import ICEBERG_TABLE_TYPE, SqlCatalog
    from pyiceberg.table import Table

    class Catalog(SqlCatalog):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._parsed: OrderedDict[str, tuple] = OrderedDict()  # location -> (metadata, its FileIO)
            self._parsing = threading.Lock()
            self._row_query = None  # load_table's query of a table's row

        def _keep(self, location: str, metadata, io) -> None:
            with self._parsing:
                self._parsed[location] = (metadata, io)
                self._parsed.move_to_end(location)
                while len(self._parsed) > METADATA_CACHE:
                    self._parsed.popitem(last=False)

        def load_table(self, identifier):
            """The table whose catalog row names a metadata file parsed before: that row alone
            read (one SQL query, no ORM); else pyiceberg's load."""
            from sqlalchemy import text

            if self._row_query is None:
                query = ("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = :c "
                         "AND table_namespace = :n AND table_name = :t")
                if self._iceberg_type_filter() is not None:  # (a catalog that also keeps views)
                    query += f" AND (iceberg_type = '{ICEBERG_TABLE_TYPE}' OR iceberg_type IS NULL)"
                self._row_query = text(query)
            ident = self.identifier_to_tuple(identifier)
            with self.engine.connect() as db:
                row = db.execute(self._row_query, {"c": self.name, "n": ".".join(ident[:-1]), "t": ident[-1]}).first()
            with self._parsing:
                parsed = self._parsed.get(row[0]) if row is not None and row[0] else None
            if parsed is None:
                return super().load_table(identifier)
            return Table(identifier=ident, metadata=parsed[0], metadata_location=row[0], io=parsed[1], catalog=self)

        def _convert_orm_to_iceberg(self, orm_table):
            location = orm_table.metadata_location
            with self._parsing:
                parsed = self._parsed.get(location) if location else None
            if parsed is None or not orm_table.table_name or not orm_table.table_namespace:
                table = super()._convert_orm_to_iceberg(orm_table)
                self._keep(location, table.metadata, table.io)
                return table
            return Table(identifier=(*self.identifier_to_tuple(orm_table.table_namespace), orm_table.table_name),
                         metadata=parsed[0], metadata_location=location, io=parsed[1], catalog=self)

        def commit_table(self, table, requirements, updates):
            response = super().commit_table(table, requirements, updates)
            self._keep(response.metadata_location, response.metadata, table.io)
            return response

    return Catalog


_BOUND: dict[int, tuple[str, str]] = {}  # a JVM session's hash -> the (catalog, location) it was bound to


def bind_catalog(spark, config: CatalogConfig) -> None:
    """Makes the Spark session's catalog ``kaudit`` the one ``config`` opens. A session that already exists
    (reused by ``get_spark``) takes the catalog's settings, but Spark keeps a catalog it has
    loaded: unless the session was bound to this catalog and location already, Spark's catalogs
    are reloaded on their next use."""
    jsession = spark._jsparkSession
    key, want = jsession.hashCode(), (config.uri, config.location)
    if _BOUND.get(key) == want:
        return
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}"
    for name, value in config.spark_conf([]).items():
        if name.startswith((prefix, "spark.sql.iceberg.")):  # the catalog's and Iceberg's runtime settings
            spark.conf.set(name, value)
    jsession.sessionState().catalogManager().reset()
    _BOUND[key] = want
