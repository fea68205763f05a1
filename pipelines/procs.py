"""Child processes and the process kaudit runs in: children that die with kaudit (a ``kill -9``
of a kaudit command leaves no worker or ``spark-submit`` behind: Linux ``prctl(PR_SET_PDEATHSIG)``;
the Spark JVM of a local session already exits when its Python parent's pipe closes), and whether
spark-submit started this process."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with(parent: int) -> None:
    """In a child: get SIGKILL when the parent dies, and exit now if ``parent`` is already gone
    (it died before the prctl). A pool initializer, or a ``preexec_fn``."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def inside_spark_submit() -> bool:
    """True in a driver that spark-submit (or the pyspark shell) started: spark-class sources
    ``load-spark-env.sh``, which exports ``SPARK_ENV_LOADED`` to the driver. (Not
    ``PYSPARK_SUBMIT_ARGS``: users set it for sessions they start themselves too.)"""
    return bool(os.environ.get("SPARK_ENV_LOADED"))
