"""The warehouse: where a run's tables live and how they are written and read.

- :mod:`~pipelines.warehouse.tables`: every raw and core table declared once (Arrow schemas).
- :mod:`~pipelines.warehouse.warehouse`: the warehouse (every table an Apache Iceberg table of one
  catalog; a step's tables committed and published together) and :func:`open_warehouse`.
- :mod:`~pipelines.warehouse.writer`: a step's writes (Arrow batches straight into Iceberg data files).
- :mod:`~pipelines.warehouse.locks`: one writer per run and step.
- :mod:`~pipelines.warehouse.runs`: run ids and the record of each run's steps.
- :mod:`~pipelines.warehouse.reading`: the one reader, checked against the declarations.
- :mod:`~pipelines.warehouse.quarantine`: the rows of input that could not be read.
- :mod:`~pipelines.warehouse.iceberg`: the table format underneath (schemas mapped to Iceberg's,
  the catalog, write-audit-publish of a step's snapshots, Spark's session and jars, WebHDFS).
"""
