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


def _one_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


USAGE_ERRORS = [
    (["--run-id", "../../x", "build"],
     "kaudit: --run-id '../../x': a run id is letters, digits, '-' and '_' only (at most 64)"),
    (["--run-id", "a b", "report"],
     "kaudit: --run-id 'a b': a run id is letters, digits, '-' and '_' only (at most 64)"),
    (["report", "--run-id", "v1.2"],
     "kaudit: --run-id 'v1.2': a run id is letters, digits, '-' and '_' only (at most 64)"),
    (["extract", "zk", "--hosts", "x"], "kaudit: --hosts: expected H:P[,H:P], got 'x'"),
    (["extract", "zk", "--hosts", "h:99999"], "kaudit: --hosts: expected H:P[,H:P], got 'h:99999'"),
    (["extract", "log-end"],
     "kaudit: extract log-end: give Kafka log dirs (PATH...), --offsets-file FILE or --topic-configs FILE"),
    (["extract", "offsets"], "kaudit extract offsets: Missing argument 'paths'. (see 'kaudit extract offsets --help')"),
    (["extract", "offsets", "--workers", "0", "x"], "kaudit: --workers 0: expected 1 or more"),
    (["extract", "zk-snapshot", "d", "--at-zxid", "zz"],
     "kaudit extract zk-snapshot: Invalid value for --at-zxid: 'zz' is not a number "
     "(see 'kaudit extract zk-snapshot --help')"),
    (["build", "--nope"], "kaudit build: No such option: --nope (see 'kaudit build --help')"),
    (["frobnicate"], "kaudit: No such command 'frobnicate'. (see 'kaudit --help')"),
]


@pytest.mark.parametrize("args,line", USAGE_ERRORS, ids=lambda a: " ".join(a) if isinstance(a, list) else None)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, args, line):
    result = kaudit("--warehouse", str(tmp_path / "wh"), *args)
    assert (result.returncode, _one_line(result)) == (2, line)
    assert not (tmp_path / "wh").exists()  # nothing was started


def test_global_options_work_after_the_command(tmp_path):
    before = kaudit("--warehouse", str(tmp_path), "--run-id", "r1", "report")
    after = kaudit("report", "--run-id", "r1", "--warehouse", str(tmp_path))
    assert before.returncode == after.returncode == 1
    assert before.stderr == after.stderr == (
        "run r1\nkaudit: run r1: not built yet (no core/assignment_audit), nothing to report on; "
        "run `kaudit build` first\n"
    )


@pytest.mark.parametrize("command", [["build"], ["validate"], ["report"], ["--run-id", "latest", "report"]])
def test_steps_on_an_empty_warehouse_name_it(tmp_path, command):
    result = kaudit("--warehouse", str(tmp_path / "wh"), *command)
    assert result.returncode == 1
    assert _one_line(result) == (
        f"kaudit: {tmp_path / 'wh'}: no run in this warehouse yet (start with `kaudit extract ...`)"
    )


def test_build_of_a_run_with_nothing_extracted_names_the_run(tmp_path):
    # a run that only has log ends: nothing to audit
    (tmp_path / "offsets.txt").write_text("t:0:5\n")
    offsets_file = tmp_path / "offsets.txt"
    assert kaudit("--warehouse", str(tmp_path / "wh"), "extract", "log-end", "--offsets-file",
                  str(offsets_file)).returncode == 0
    result = kaudit("--warehouse", str(tmp_path / "wh"), "build")
    assert result.returncode == 1
    run_line, error = result.stderr.strip().splitlines()
    run_id = run_line.split()[1]
    assert error.startswith(
        f"kaudit: run {run_id}: nothing extracted to build (no ZooKeeper znodes, no __consumer_offsets records"
    )
    assert not (tmp_path / "wh" / "core").exists()
    for step in ("validate", "report"):
        result = kaudit("--warehouse", str(tmp_path / "wh"), step)
        assert result.returncode == 1 and f"run {run_id}: not built yet" in result.stderr


def test_a_zookeeper_host_list_is_checked_before_connecting(tmp_path):
    import time

    started = time.monotonic()
    result = kaudit("--warehouse", str(tmp_path), "extract", "zk", "--hosts", "127.0.0.1:2181,nohostport")
    assert result.returncode == 2 and time.monotonic() - started < 10


def test_the_options_read_before_click_are_the_ones_the_cli_declares():
    """``pipelines.argv`` (the global options, hoisted) and ``pipelines.zookeeper.prefetch``
    (zk-snapshot's own) read the command line before click does: their option names are the
    CLI's, a value taken exactly where click takes one."""
    import typer

    from pipelines import argv
    from pipelines.cli import app
    from pipelines.zookeeper import prefetch

    def options(command, flags: bool) -> set[str]:
        return {o for p in command.params if p.param_type_name == "option" and p.is_flag == flags for o in p.opts}

    group = typer.main.get_command(app)
    assert options(group, flags=True) == set(argv.GLOBAL_FLAGS)
    assert options(group, flags=False) == set(argv.GLOBAL_OPTIONS)
    snapshot = group.commands["extract"].commands["zk-snapshot"]
    assert options(snapshot, flags=True) == set()
    assert options(snapshot, flags=False) == prefetch.VALUE_OPTIONS
