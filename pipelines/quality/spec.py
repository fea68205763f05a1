"""The vocabulary of the suites in ``expectations/``: a :class:`Check` is one GX expectation
on one view, with a stable name (its results.json key and failures file), a level and a
sentence an auditor reads. Suites are plain Python modules that define ``SUITE``."""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.errors import StepError

# the end of a value in a regex expectation, read alike by Java's regex (GX's Spark engine) and
# Python's (its pandas engine): ``$`` also matches before a final newline, ``\z`` is Java's only
END = r"(?![\s\S])"
ERROR = "error"
WARNING = "warning"
LEVELS = (ERROR, WARNING)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Check:
    """One expectation: ``expectation`` (a GX 1.x expectation object) evaluated on ``view``.

    ``name`` names the check in results.json and its failing rows in
    ``failures/<name>.parquet``; table-level expectations (row counts) export the whole view
    as their failing rows."""

    name: str
    view: str
    expectation: Any
    level: str = ERROR
    description: str = ""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"check name {self.name!r}: use lower_snake_case")
        if self.level not in LEVELS:
            raise ValueError(f"check {self.name}: level must be one of {LEVELS}, not {self.level!r}")


@dataclass(frozen=True)
class Suite:
    name: str
    checks: list[Check] = field(default_factory=list)

    def views(self) -> list[str]:
        """The views the suite reads, in first-use order."""
        return list(dict.fromkeys(c.view for c in self.checks))


def suites_dir() -> Path:
    """``$KAUDIT_EXPECTATIONS``, else ``expectations/`` of the source tree, else of the working
    directory (an installed, non-editable kaudit)."""
    env = os.environ.get("KAUDIT_EXPECTATIONS")
    if env:
        return Path(env)
    candidates = [Path(__file__).resolve().parents[2] / "expectations", Path.cwd() / "expectations"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def load_suites(directory: Path | None = None) -> list[Suite]:
    """Every ``SUITE`` of ``directory/*.py`` (fresh objects on each call), sorted by file name.

    Raises ValueError when two checks share a name (their failures files would collide)."""
    directory = directory or suites_dir()
    if not directory.is_dir() or not any(directory.glob("*.py")):
        raise StepError(f"{directory}: no expectation suites there (set KAUDIT_EXPECTATIONS to the suites dir)")
    suites: list[Suite] = []
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"kaudit_expectations_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        suite = getattr(module, "SUITE", None)
        if not isinstance(suite, Suite):
            raise ValueError(f"{path}: defines no SUITE = Suite(...)")
        suites.append(suite)
    seen: dict[str, str] = {}
    for suite in suites:
        for check in suite.checks:
            if check.name in seen:
                raise ValueError(f"check {check.name!r} is defined in suites {seen[check.name]} and {suite.name}")
            seen[check.name] = suite.name
    return suites
