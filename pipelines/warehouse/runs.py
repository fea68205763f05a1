"""Runs: what a run id may be, which run a command works on, and what each run has done.

A run is one audit of one cluster: every table partition ``run_id=<id>/`` of the warehouse.
The rule for commands given no ``--run-id`` (docs/concepts.md "Runs"; docs/contract.md "Runs"):

- an extract continues the newest run while it is *open* (not built yet, and its last step
  finished less than :data:`SITTING` ago), else it starts a new run, so the extracts of one
  sitting land in one run and re-running an extract replaces its own partition;
- ``build``, ``validate`` and ``report`` work on the newest run (``--run-id latest`` names it);
- ``run --config`` and ``demo`` start a new run.

"Newest" is the run whose first step finished last (``runs/run_id=<id>/run.json``, written once,
when a run's first step publishes). Each finished step adds ``runs/run_id=<id>/steps/<step>.json``;
both are single-file atomic writes, so concurrent steps of one run never lose each other's
record. A run named explicitly is never redirected: concurrent runs with their own ids do not
see each other.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipelines.errors import InputError, UsageError

LATEST = "latest"
RUN_ID_RULE = "letters, digits, '-' and '_' only (at most 64)"
RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SITTING = timedelta(hours=8)  # an unbuilt run older than this is not continued
RUNS = "runs"
BUILD_STEP = "build_core"


def check_run_id(run_id: str, where: str = "--run-id") -> str:
    """``run_id`` if it follows the one rule for run ids; :class:`UsageError` (exit 2) if not."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise UsageError(f"{where} {run_id!r}: a run id is {RUN_ID_RULE}")
    return run_id


def new_run_id(now: datetime | None = None) -> str:
    """A new run's id: UTC time ``YYYYMMDDTHHMMSSZ``."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def _now() -> datetime:
    return datetime.now(UTC)


def _write_json(path: Path, data: dict, exclusive: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    if exclusive:
        try:
            os.link(tmp, path)  # fails if another step of the run got there first: keep theirs
        except FileExistsError:
            pass
        tmp.unlink()
    else:
        os.replace(tmp, path)


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    started_at: datetime
    steps: dict[str, datetime]

    @property
    def built(self) -> bool:
        return BUILD_STEP in self.steps

    @property
    def last_activity(self) -> datetime:
        return max([self.started_at, *self.steps.values()])

    def ago(self, now: datetime | None = None) -> str:
        seconds = int(((now or _now()) - self.last_activity).total_seconds())
        if seconds < 90:
            return f"{max(seconds, 0)} s ago"
        if seconds < 90 * 60:
            return f"{seconds // 60} min ago"
        return f"{seconds // 3600} h ago"


class RunLog:
    """The ``runs/`` records of one warehouse root."""

    def __init__(self, root: Path):
        self.dir = Path(root) / RUNS

    def _run_dir(self, run_id: str) -> Path:
        return self.dir / f"run_id={run_id}"

    def record_step(self, run_id: str, step: str, when: datetime | None = None) -> None:
        """``step`` of ``run_id`` finished (and the run exists from now on, if it did not)."""
        when = when or _now()
        _write_json(self._run_dir(run_id) / "run.json", {"run_id": run_id, "started_at": when.isoformat()},
                    exclusive=True)
        _write_json(self._run_dir(run_id) / "steps" / f"{step}.json", {"step": step, "finished_at": when.isoformat()})

    def info(self, run_id: str) -> RunInfo | None:
        d = self._run_dir(run_id)
        try:
            started = datetime.fromisoformat(json.loads((d / "run.json").read_text())["started_at"])
        except (OSError, ValueError, KeyError):
            if not d.is_dir():
                return None
            started = datetime.fromtimestamp(d.stat().st_mtime, UTC)  # a run from before run.json
        steps = {}
        for f in sorted((d / "steps").glob("*.json")) if (d / "steps").is_dir() else []:
            try:
                steps[f.stem] = datetime.fromisoformat(json.loads(f.read_text())["finished_at"])
            except (OSError, ValueError, KeyError):
                continue
        return RunInfo(run_id, started, steps)

    def all(self) -> list[RunInfo]:
        """Every recorded run, oldest first."""
        if not self.dir.is_dir():
            return []
        runs = []
        for d in self.dir.iterdir():
            if d.is_dir() and d.name.startswith("run_id=") and RUN_ID.match(d.name[7:]):
                info = self.info(d.name[7:])
                if info is not None:
                    runs.append(info)
        return sorted(runs, key=lambda r: (r.started_at, r.run_id))

    def newest(self) -> RunInfo | None:
        runs = self.all()
        return runs[-1] if runs else None


@dataclass(frozen=True)
class Choice:
    """The run a command works on and how it was chosen, for the command's first line."""

    run_id: str
    how: str  # given | new | continued | newest

    def line(self, info: RunInfo | None = None) -> str:
        if self.how == "continued" and info is not None:
            done = ", ".join(info.steps) or "nothing yet"
            return f"run {self.run_id} (continued: {done}; last step {info.ago()})"
        return f"run {self.run_id}" + {"given": "", "new": " (new)", "newest": " (the newest run)"}[self.how]


def choose(root: Path, given: str | None, kind: str, now: datetime | None = None) -> Choice:
    """The run for a command of ``kind`` ('extract', 'step' for build/validate/report, 'new' for
    run/demo), given ``--run-id`` (or None)."""
    log = RunLog(root)
    if given == LATEST or (given is None and kind == "step"):
        newest = log.newest()
        if newest is None:
            raise InputError(f"{Path(root)}: no run in this warehouse yet (start with `kaudit extract ...`)")
        return Choice(newest.run_id, "newest")
    if given is not None:
        return Choice(check_run_id(given), "given")
    now = now or _now()
    if kind == "extract":
        newest = log.newest()
        if newest is not None and not newest.built and now - newest.last_activity < SITTING:
            return Choice(newest.run_id, "continued")
    run_id = new_run_id(now)
    taken = {r.run_id for r in log.all()}
    n = 1
    while run_id in taken:  # two runs started in one second
        n += 1
        run_id = f"{new_run_id(now)}-{n}"
    return Choice(run_id, "new")
