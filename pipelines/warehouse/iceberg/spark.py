"""Spark over the Iceberg warehouse: the session's catalog settings and the one read of a run's table."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.warehouse.iceberg import jars, schemas
from pipelines.warehouse.iceberg.catalog import bind_catalog
from pipelines.warehouse.warehouse import Warehouse


def session_conf(warehouse: Warehouse) -> dict[str, str]:
    """The catalog ``kaudit`` (Iceberg's ``SparkCatalog`` over the warehouse's SQL catalog) and
    Iceberg's jars; :class:`~pipelines.warehouse.iceberg.jars.JarsMissing` while they are not fetched."""
    return warehouse.catalog_config.spark_conf(jars.paths())


def submit_args(warehouse: Warehouse) -> list[str]:
    """:func:`session_conf` as ``spark-submit`` options (``--conf key=value``): what a Spark
    application that is not kaudit's own session (a Thrift Server for dbt's target
    ``thrift`` and for analysts' SQL clients) is started with, so that its catalog
    ``kaudit`` is the warehouse's. Iceberg's jars are also on the driver's class path: the Thrift
    Server runs each client's statements with a class loader of its own, which does not see the
    classes of ``spark.jars`` that Iceberg's SQL extensions load while analysing a statement."""
    conf = session_conf(warehouse)
    args = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    return [*args, "--driver-class-path", ":".join(conf["spark.jars"].split(","))]


def read_table(spark: SparkSession, warehouse: Warehouse, table: str, run_id: str,
               with_run_id: bool = True, snapshot_id: int | None = None) -> DataFrame:
    """Run ``run_id``'s rows of ``table`` as its declared Spark schema, read at the snapshot the
    run's ledger recorded, or at ``snapshot_id`` (a time-travel read, pruned to the run's
    partition); no rows of that schema when no step of the run wrote it."""
    from pipelines.spark.schemas import empty, table_schema

    sid = warehouse.snapshot_id(table, run_id) if snapshot_id is None else snapshot_id
    if sid is None:  # (an empty local relation: no Python workers, see ``empty_frame``)
        return empty(spark, table, with_run_id)
    bind_catalog(spark, warehouse.catalog_config)  # (a session that served another warehouse reads this one's)
    df = (spark.read.option("versionAsOf", sid).table(warehouse.spark_identifier(table))
          .where(F.col(schemas.RUN_ID) == F.lit(run_id)))
    # a cast only where Iceberg's type is wider than the declared one (int for a short or byte):
    # a column cast without need is a new attribute, and a plan that joins a frame read here
    # with a local checkpoint of itself then has two producers of one attribute, which Spark's
    # analyzer cannot tell apart ("Failure when resolving conflicting references in Join")
    read = {f.name: f.dataType for f in df.schema.fields}
    cols = [F.col(f.name) if read.get(f.name) == f.dataType else F.col(f.name).cast(f.dataType).alias(f.name)
            for f in table_schema(table).fields]
    return df.select(*cols, F.col(schemas.RUN_ID)) if with_run_id else df.select(*cols)
