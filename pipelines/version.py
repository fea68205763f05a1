"""kaudit's version: the one in ``pyproject.toml``, read from the installed package's metadata
(an editable install included), or from ``pyproject.toml`` itself when kaudit runs from a
checkout or a ``--py-files`` zip that is not installed."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@cache
def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("kaudit")
    except PackageNotFoundError:
        pass
    try:
        import tomllib

        return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, ValueError):
        return "unknown"
