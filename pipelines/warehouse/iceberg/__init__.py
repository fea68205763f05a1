"""The warehouse as Apache Iceberg tables (``warehouse.format: iceberg``): the mapping of the
declared schemas (``schemas``), the catalog shared by pyiceberg and Spark (``catalog``), the
warehouse that commits a step's tables as snapshots (``warehouse``) and Spark's jars (``jars``).
docs/iceberg.md says why it is laid out this way."""
