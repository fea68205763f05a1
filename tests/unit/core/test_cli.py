"""The command layer's contract: commands exist, usage errors exit 2 in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

COMMANDS = [
    ["extract", "zk"],
    ["extract", "zk-snapshot"],
    ["extract", "offsets"],
    ["extract", "log-end"],
    ["build"],
    ["validate"],
    ["report"],
    ["run"],
    ["demo"],
]


def kaudit(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_contract_command_exists(command):
    result = kaudit(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_unknown_command_is_a_usage_error():
    result = kaudit("frobnicate")
    assert result.returncode == 2


def test_bad_assignor_is_a_one_line_usage_error(tmp_path):
    result = kaudit("--warehouse", str(tmp_path), "build", "--assignor", "nogroup")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "kaudit: --assignor 'nogroup': expected GROUP=range|roundrobin"
    ]
    assert not (tmp_path / "core").exists()


def test_parse_assignors_keeps_group_names_with_equals():
    from pipelines.steps import parse_assignors

    assert parse_assignors(["a=b=roundrobin", "g=range"]) == {"a=b": "roundrobin", "g": "range"}
