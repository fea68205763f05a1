"""One writer per run and step: :class:`StepLock`, a lock file in the warehouse's local directory.

``<root>/.locks/<run>.<step>.lock`` holds the writer's host, pid and process start; a second
writer of the same (run, step) fails with :class:`StepBusy`, and the lock of a writer that died
(same host, no such process) is taken over. Publication of a step's tables has a lock of its own
(``.locks/publish.lock``, :mod:`pipelines.warehouse.iceberg.publish`).
"""

from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from pipelines.errors import KauditError


class StepBusy(KauditError):
    """Another live process writes the same step of the same run. Exit 1."""


LOCKS = ".locks"  # <root>/.locks/<run>.<step>.lock, and the publish lock


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot), None if there is none: with the
    pid it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "?"  # alive, start time unknown (no /proc)
    return stat.rsplit(")", 1)[1].split()[19]


class StepLock:
    """One writer per (run, step): ``<root>/.locks/<run>.<step>.lock`` holds the writer's host, pid
    and process start. A second writer fails with :class:`StepBusy`; the lock of a writer that
    died (same host, no such process) is taken over."""

    def __init__(self, root: Path, run_id: str, step: str):
        self.path = root / LOCKS / f"{run_id}.{step}.lock"
        self.run_id, self.step = run_id, step

    def __enter__(self) -> StepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        me = {"host": socket.gethostname(), "pid": os.getpid(), "start": _process_start(os.getpid()),
              "since": datetime.now(UTC).isoformat(timespec="seconds")}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and self._alive(holder):
                    raise StepBusy(
                        f"run {self.run_id}: step {self.step} is being written by pid {holder.get('pid')} on "
                        f"{holder.get('host')} since {holder.get('since')}; wait for it or use another --run-id"
                    ) from None
                self.path.unlink(missing_ok=True)  # its writer died: take the lock over
                continue
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            return self
        raise StepBusy(f"run {self.run_id}: cannot take the lock {self.path}")

    def _holder(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None  # being written, or torn by a crash: not a live holder's

    @staticmethod
    def _alive(holder: dict) -> bool:
        if holder.get("host") != socket.gethostname():
            return True  # another machine's writer: cannot tell, assume it runs
        pid = holder.get("pid")
        start = _process_start(pid) if isinstance(pid, int) else None
        return start is not None and (start == holder.get("start") or "?" in (start, holder.get("start")))

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)
