"""Waiting for a server a test started (ZooKeeper, S3Proxy, the HDFS minicluster) to answer."""

from __future__ import annotations

import os
import signal
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


def stop_group(proc: subprocess.Popen, wait: float = 30) -> None:
    """Stops a server started in a process group of its own (``start_new_session``): SIGTERM to the
    group, SIGKILL after ``wait`` seconds; nothing when it has exited."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
