"""The Apache Iceberg machinery under the warehouse (:mod:`pipelines.warehouse.warehouse`): the
mapping of the declared schemas (``schemas``), the catalog shared by pyiceberg and Spark
(``catalog``), a partition replaced in one snapshot (``partition_commit``), the write-audit-publish
of a step's snapshots (``publish``), Spark's session settings and reads (``spark``), Spark's jars
(``jars``) and pyiceberg's FileIO over WebHDFS (``webhdfs``). docs/warehouse.md says why it is
laid out this way."""
