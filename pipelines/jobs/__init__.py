"""The spark-submit entry scripts of the Spark steps (``cluster.job_path``): a regular package, so
that the ``--py-files`` zip serves ``pipelines.jobs.common`` (zipimport finds no namespace packages)."""
