"""Spark ``StructType`` views of the Arrow schemas of :mod:`pipelines.warehouse.tables`.

Nothing is declared here: every Spark schema is converted from the one Arrow declaration,
once per table, so the extractors (pyarrow), the Spark jobs, the quality suites and the dbt
sources (the Spark SQL of these types) cannot drift apart.
"""

from __future__ import annotations

from functools import cache

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from pipelines.warehouse.reading import declared_schema

_SCALARS = {
    pa.string(): T.StringType(),
    pa.large_string(): T.StringType(),
    pa.binary(): T.BinaryType(),
    pa.large_binary(): T.BinaryType(),
    pa.bool_(): T.BooleanType(),
    pa.int8(): T.ByteType(),
    pa.int16(): T.ShortType(),
    pa.int32(): T.IntegerType(),
    pa.int64(): T.LongType(),
    pa.float32(): T.FloatType(),
    pa.float64(): T.DoubleType(),
    pa.date32(): T.DateType(),
}


def spark_type(arrow_type: pa.DataType) -> T.DataType:
    """The Spark type of one Arrow type (timestamps with a zone -> TimestampType, UTC)."""
    if arrow_type in _SCALARS:
        return _SCALARS[arrow_type]
    if pa.types.is_timestamp(arrow_type):
        return T.TimestampType() if arrow_type.tz else T.TimestampNTZType()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return T.ArrayType(spark_type(arrow_type.value_type), True)
    if pa.types.is_struct(arrow_type):
        return T.StructType([T.StructField(f.name, spark_type(f.type), f.nullable) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return T.MapType(spark_type(arrow_type.key_type), spark_type(arrow_type.item_type), True)
    raise TypeError(f"no Spark SQL type for Arrow type {arrow_type}")


def struct_type(schema: pa.Schema, with_run_id: bool = False) -> T.StructType:
    fields = [T.StructField(f.name, spark_type(f.type), True) for f in schema]
    if with_run_id:
        fields.append(T.StructField("run_id", T.StringType(), True))
    return T.StructType(fields)


@cache
def table_schema(table: str, with_run_id: bool = False) -> T.StructType:
    """Spark schema of a warehouse table (``raw/...``, ``core/...`` or ``marts/...``), optionally with run_id."""
    return struct_type(declared_schema(table), with_run_id)


def empty(spark: SparkSession, table: str, with_run_id: bool = False) -> DataFrame:
    """No rows of ``table``'s declared schema (with ``run_id`` if ``with_run_id``)."""
    return empty_frame(spark, table_schema(table, with_run_id))


def empty_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """No rows of ``schema``, as an empty local relation made in the JVM.

    Not ``spark.createDataFrame([], schema)``: PySpark parallelizes even an empty list as a
    Python RDD, and every query over it starts Python workers to read nothing (in a tiny run's
    build, each write whose plan read such an empty table waited seconds on its Python workers
    with next to no JVM CPU). An empty local relation needs no task at all: the optimizer folds
    the joins, unions and aggregations over it away."""
    jvm = spark._jvm
    jschema = jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json())
    return DataFrame(spark._jsparkSession.createDataFrame(jvm.java.util.ArrayList(), jschema), spark)
