"""The docs describe the code as it is: the generated reference pages are not stale, every
one-line error kaudit raises is on the Troubleshooting page, the site builds with
``mkdocs build --strict`` (no broken link or anchor), and the README stays a short guide."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from pipelines import docs

REPO = Path(__file__).resolve().parents[3]
# The errors the CLI prints as one line (pipelines/errors.py and the subclasses below); the
# ZooKeeper format errors are quarantine reasons, described there as a list.
ONE_LINE = {"InputError", "UsageError", "StepError", "ExpectationsFailed", "StepBusy", "MartContractError",
            "SchemaMismatch"}


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_generated_reference_pages_are_not_stale():
    assert docs.stale() == [], "run `python -m pipelines.docs` (or `make docs-reference`) and commit docs/reference/"


def test_the_command_reference_has_every_command_and_option():
    import typer

    from pipelines.cli import app

    page = (REPO / "docs" / "reference" / "commands.md").read_text(encoding="utf-8")

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")

    for path, cmd in walk(typer.main.get_command(app), "kaudit"):
        assert f"`{path}`" in page
        for p in cmd.params:
            if p.param_type_name == "option":
                assert all(f"`{o}`" in page for o in p.opts), (path, p.opts)


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, ast.BinOp):
        return _literals(node.left) + _literals(node.right)
    return []


def _raised_messages() -> list[tuple[str, str]]:
    """(file:line, the longest literal piece of the message) of every one-line error raised in
    pipelines/ whose message has a literal piece of some length."""
    out = []
    for path in sorted((REPO / "pipelines").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
                continue
            func = node.exc.func
            if getattr(func, "id", getattr(func, "attr", None)) not in ONE_LINE:
                continue
            pieces = sorted((_flat(p).strip(" :;,()") for p in _literals(node.exc.args[0])), key=len)
            if pieces and len(pieces[-1]) >= 8:
                out.append((f"{path.relative_to(REPO)}:{node.lineno}", pieces[-1]))
    return out


def test_every_error_message_is_on_the_troubleshooting_page():
    page = _flat((REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8"))
    messages = _raised_messages()
    assert len(messages) > 50
    missing = [f"{where}: {piece!r}" for where, piece in messages if piece not in page]
    assert missing == [], "describe these messages in docs/troubleshooting.md"


def test_the_docs_site_builds_strict(tmp_path):
    # not --quiet: it hides the warnings --strict counts, and the build passes with broken links
    done = subprocess.run([str(Path(sys.executable).with_name("mkdocs")), "build", "--strict",
                           "--site-dir", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for page in ("index.html", "getting-started.html", "reference/commands.html", "reference/tables.html",
                 "troubleshooting.html", "formats.html", "contract.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_the_readme_is_a_short_guide_with_the_report_picture():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    assert "docs/assets/report.png" in readme and (REPO / "docs" / "assets" / "report.png").is_file()
    assert "make demo" in readme and "make test" in readme
    assert not re.search(r"^#+ .*changelog", readme, re.I | re.M)
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).is_file(), link
