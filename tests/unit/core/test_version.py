"""One version: ``project.version`` of pyproject.toml is what ``kaudit --version`` prints and
what CHANGELOG.md's newest release (or its Unreleased section) stands on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
KAUDIT = Path(sys.executable).with_name("kaudit")


def test_kaudit_version_prints_the_version_of_pyproject():
    for argv in (["--version"], ["report", "--version"]):
        done = subprocess.run([str(KAUDIT), *argv], capture_output=True, text=True, timeout=60, cwd=REPO,
                              env=dict(os.environ))
        assert (done.returncode, done.stdout, done.stderr) == (0, f"kaudit {VERSION}\n", "")


def test_the_changelog_has_the_version_and_an_unreleased_section():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert releases[0] == "Unreleased"
    assert VERSION in releases


def test_the_report_footer_shows_the_version(warehouse):
    from pipelines.context import RunContext
    from pipelines.report.write import write_report

    page = write_report(RunContext(warehouse, "empty", quiet=True))
    footer = re.search(r"<footer>(.*?)</footer>", page.read_text(), re.S).group(1)
    assert f"kaudit {VERSION} " in footer
