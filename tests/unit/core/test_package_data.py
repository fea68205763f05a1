"""What an installed kaudit (a wheel, not this checkout) holds: every module directory is a
package setuptools finds, every ``package-data`` glob of ``pyproject.toml`` matches files, and
every file the code loads from the package tree (report templates and assets, demo data, KRaft
schemas, Spark's log config) is matched by one, as setuptools' ``build_py`` expands them."""

from __future__ import annotations

import glob
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

REPO = Path(__file__).resolve().parents[3]
PACKAGE = REPO / "pipelines"
NOT_SHIPPED = {".py", ".pyc", ".pyo", ".so"}  # modules go in as modules; bytecode and builds never


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _source_files() -> list[Path]:
    return [p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.relative_to(PACKAGE).parts]


def test_every_module_directory_is_a_package_setuptools_finds():
    find = _setuptools()["packages"]["find"]
    found = set(find_namespace_packages(where=str(REPO), include=find["include"]))
    modules = {".".join(p.parent.relative_to(REPO).parts) for p in _source_files() if p.suffix == ".py"}
    assert modules <= found, sorted(modules - found)


def test_every_package_data_glob_matches_and_every_data_file_is_shipped():
    patterns = _setuptools()["package-data"]["pipelines"]
    shipped: set[Path] = set()
    for pattern in patterns:  # what build_py does: glob(recursive=True) under the package dir, files only
        matched = {Path(p) for p in glob.glob(str(PACKAGE / pattern), recursive=True) if Path(p).is_file()}
        assert matched, f"package-data {pattern!r} matches no file under {PACKAGE}"
        shipped |= matched
    data = {p for p in _source_files() if p.suffix not in NOT_SHIPPED and not p.name.startswith(".")}
    unshipped = sorted(str(p.relative_to(PACKAGE)) for p in data - shipped)
    assert not unshipped, f"in the package tree but not in package-data (not in a wheel): {unshipped}"
    for needed in ("report/templates/report.html.j2", "report/assets/report.css", "demo/faults.json",
                   "kraft/schemas/ConfigRecord.json", "spark/log4j2.properties"):
        assert PACKAGE / needed in shipped, needed
