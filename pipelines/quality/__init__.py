"""Data quality: the Great Expectations suites of ``expectations/`` run with Spark on a run's
tables (``kaudit validate``). ``spec`` holds the suite vocabulary, ``views`` the Spark frames
the suites look at, ``gx_runner`` the GX plumbing and ``run`` the step itself."""

import os

# Great Expectations sends no usage analytics from kaudit. Set when the package is imported, before
# GX is (it reads the variable as it loads), and never again: a thread importing GX does not
# change the environment while another starts a process.
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
