"""Waiting for a server a test started (ZooKeeper, S3Proxy, the HDFS minicluster) to answer."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def await_server(proc: subprocess.Popen, answers: Callable[[], bool], what: str, log: Path,
                 timeout: float, poll: float = 0.2) -> None:
    """Returns once ``answers()`` is true; raises RuntimeError, with the end of ``log``, when
    ``proc`` exits first or ``timeout`` seconds pass (the caller stops the server)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; {log}:\n{_tail(log)}")
        if answers():
            return
        time.sleep(poll)
    raise RuntimeError(f"{what} did not answer within {timeout:.0f} s; {log}:\n{_tail(log)}")


def _tail(log: Path, size: int = 2000) -> str:
    try:
        return log.read_text(errors="replace")[-size:]
    except OSError:
        return "(no log)"
