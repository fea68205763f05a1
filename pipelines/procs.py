"""Child processes that die with kaudit: a ``kill -9`` of a kaudit command leaves no worker or
``spark-submit`` behind (Linux ``prctl(PR_SET_PDEATHSIG)``; the Spark JVM of a local session
already exits when its Python parent's pipe closes)."""

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
