"""Data quality: the Great Expectations suites of ``expectations/`` run with Spark on a run's
tables (``kaudit validate``). ``spec`` holds the suite vocabulary, ``views`` the Spark frames
the suites look at, ``gx_runner`` the GX plumbing and ``run`` the step itself."""
