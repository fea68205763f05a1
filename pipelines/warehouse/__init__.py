"""The warehouse: where a run's tables live and how they are written and read.

- :mod:`~pipelines.warehouse.tables`: every raw and core table declared once (Arrow schemas).
- :mod:`~pipelines.warehouse.directory`: the warehouse directory (Parquet tables, step locks,
  atomic publishing of a step's tables); :mod:`~pipelines.warehouse.iceberg`: the same tables
  as Apache Iceberg tables of one catalog; :mod:`~pipelines.warehouse.formats` opens either.
- :mod:`~pipelines.warehouse.runs`: run ids and the record of each run's steps.
- :mod:`~pipelines.warehouse.reading`: the one reader, checked against the declarations.
- :mod:`~pipelines.warehouse.quarantine`: the rows of input that could not be read.
"""
