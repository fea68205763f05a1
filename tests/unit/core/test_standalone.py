"""The repository stands alone: nothing it tracks points outside it, and a clone with nothing
beside it imports kaudit and passes tests that read the real fixtures it carries."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# A path into a directory beside the checkout (the coordination tree a clone does not have).
OUTSIDE = re.compile(r"\.\./" + r"shared\b|/work/" + r"shared\b|(?<![\w.-])shared/(fixtures|schemas|CONTRACT|FORMATS)")
# The changelog tells the history, which once had such paths; .ci/ is CI's own set-up.
EXEMPT = ("CHANGELOG.md", ".ci/")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def test_no_tracked_file_points_outside_the_repository():
    hits = []
    for name in _tracked():
        if name.startswith(EXEMPT) or name == "tests/unit/core/test_standalone.py":
            continue
        path = REPO / name
        if not path.is_file():
            continue  # deleted in the working tree
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary (segments, snapshots, images)
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{name}:{n}: {line.strip()}")
    assert hits == []


def test_the_real_fixtures_carry_their_sources_and_licences():
    real = REPO / "tests" / "fixtures" / "real"
    for d in ("zookeeper", "consumer_offsets_records"):
        readme = (real / d / "README.md").read_text(encoding="utf-8")
        assert "github.com" in readme or "Apache" in readme
    assert (real / "consumer_offsets_records" / "LICENSE-MIT").is_file()
    assert len(list((real / "consumer_offsets_records").glob("*.key"))) == 10
    for pkg in ("kafka", "kraft"):
        assert "Apache" in (REPO / "pipelines" / pkg / "schemas" / "SOURCES.md").read_text(encoding="utf-8")


def test_a_clone_with_nothing_beside_it_imports_kaudit_and_reads_its_fixtures(tmp_path):
    clone = tmp_path / "kaudit"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True, timeout=120)
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KAUDIT_WAREHOUSE")}
    where = subprocess.run(
        [sys.executable, "-c", "import pipelines, testkit; print(pipelines.__file__); print(testkit.__file__)"],
        cwd=clone, env=env, capture_output=True, text=True, check=True, timeout=60,
    ).stdout.split()
    assert [Path(p).is_relative_to(clone) for p in where] == [True, True]
    tests = ["tests/unit/kafka/test_kafka_real_records.py", "tests/unit/zookeeper/test_zk_rows.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=clone, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert re.search(r"\b(\d+) passed\b", done.stdout) and " failed" not in done.stdout


def test_testkit_is_not_in_the_wheel_and_kaudit_never_imports_it():
    import ast
    import tomllib

    from setuptools import find_namespace_packages

    find = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    packages = set(find_namespace_packages(where=str(REPO), include=find["find"]["include"]))
    assert "pipelines" in packages and not any(p.split(".")[0] == "testkit" for p in packages)
    imports = []
    for path in (REPO / "pipelines").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            imports += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] == "testkit"]
    assert imports == []
