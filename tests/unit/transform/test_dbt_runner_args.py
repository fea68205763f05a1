"""The dbt runner's plumbing, without running dbt: project discovery, the command line,
the run's source description and the failure message."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pyarrow as pa
import pytest
import yaml

from pipelines.context import RunContext
from pipelines.errors import StepError
from pipelines.spark.schemas import spark_type
from pipelines.transform import dbt_runner, project
from pipelines.transform.sources import SOURCES, run_sources
from pipelines.warehouse.tables import SCHEMAS


@pytest.mark.parametrize(
    "arrow, spark",
    [
        (pa.string(), "string"),
        (pa.int16(), "smallint"),
        (pa.int32(), "int"),
        (pa.int64(), "bigint"),
        (pa.bool_(), "boolean"),
        (pa.binary(), "binary"),
        (pa.timestamp("ms", tz="UTC"), "timestamp"),
        (pa.list_(pa.string()), "array<string>"),
        (pa.list_(pa.int32()), "array<int>"),
    ],
)
def test_spark_type_of_warehouse_types(arrow, spark):
    assert spark_type(arrow).simpleString() == spark


def test_spark_type_rejects_unknown_type():
    with pytest.raises(TypeError, match="no Spark SQL type"):
        spark_type(pa.decimal128(10, 2))


def test_every_warehouse_column_has_a_spark_type():
    for table in SOURCES.values():
        for f in SCHEMAS[table]:
            assert spark_type(f.type)


def test_run_sources_mark_missing_partitions(warehouse):
    """A table the run wrote is read at the snapshot its ledger recorded; one it did not write is
    an empty view of the same columns."""
    schema = SCHEMAS["raw/log_end_offsets"]
    row = {name: None for name in schema.names} | {"topic": "t", "partition": 0}
    warehouse.write_table("raw/log_end_offsets", "r1", pa.Table.from_pylist([row], schema=schema))
    sources = run_sources(warehouse, "r1")
    assert set(sources) == set(SOURCES)
    ends = sources["kaudit_raw.log_end_offsets"]
    assert ends["exists"] is True
    assert ends["iceberg"] == "kaudit.raw.log_end_offsets"
    assert ends["snapshot"] == warehouse.snapshot_id("raw/log_end_offsets", "r1") is not None
    assert ends["columns"][:2] == [["topic", "string"], ["partition", "int"]]
    assert sources["kaudit_raw.offset_commits"]["exists"] is False
    assert [c[0] for c in sources["kaudit_raw.offset_commits"]["columns"]] == SCHEMAS["raw/offset_commits"].names


def test_the_run_reaches_dbt_in_env_vars_only_for_its_invocation(warehouse, monkeypatch):
    """The run, its tables and its branch are in the environment while dbt runs (dbt copies it
    as it starts), then what was there before is back: a value the user had, or none."""
    monkeypatch.setenv(dbt_runner.RUN_ENV, "the user's")
    monkeypatch.delenv(dbt_runner.SOURCES_ENV, raising=False)
    monkeypatch.delenv(dbt_runner.BRANCH_ENV, raising=False)
    warehouse.write_table("raw/log_end_offsets", "r1", SCHEMAS["raw/log_end_offsets"].empty_table())
    with dbt_runner.run_env(RunContext(warehouse, "r1", quiet=True), "kaudit_r1_dbt"):
        assert os.environ[dbt_runner.RUN_ENV] == "r1"
        assert os.environ[dbt_runner.BRANCH_ENV] == "kaudit_r1_dbt"
        assert json.loads(os.environ[dbt_runner.SOURCES_ENV]) == run_sources(warehouse, "r1")
    assert os.environ[dbt_runner.RUN_ENV] == "the user's"
    assert dbt_runner.SOURCES_ENV not in os.environ and dbt_runner.BRANCH_ENV not in os.environ


def test_a_new_run_starts_from_the_newest_saved_parse_of_the_warehouse(warehouse, tmp_path, monkeypatch):
    """A run's target dir gets the newest saved parse among the warehouse's runs (dbt checks it
    before using it), else the one saved at install for its target; a run whose own is the
    newest keeps it."""
    monkeypatch.setattr(dbt_runner, "INSTALL_PARSES", tmp_path / "installed")
    (tmp_path / "installed" / "session").mkdir(parents=True)
    (tmp_path / "installed" / "session" / dbt_runner.SAVED_PARSE).write_bytes(b"installed")
    dbt_runner._seed_saved_parse(RunContext(warehouse, "r0", quiet=True), "thrift")  # none for thrift
    assert not warehouse.partition_dir("dbt/target", "r0").exists()
    dbt_runner._seed_saved_parse(RunContext(warehouse, "r0", quiet=True), "session")
    assert (warehouse.partition_dir("dbt/target", "r0") / dbt_runner.SAVED_PARSE).read_bytes() == b"installed"
    (warehouse.partition_dir("dbt/target", "r0") / dbt_runner.SAVED_PARSE).unlink()

    def saved(run_id, content, mtime):
        path = warehouse.partition_dir("dbt/target", run_id) / dbt_runner.SAVED_PARSE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        os.utime(path, ns=(mtime, mtime))
        return path

    saved("old", b"old", 1_000_000_000)
    saved("new", b"new", 2_000_000_000)
    dbt_runner._seed_saved_parse(RunContext(warehouse, "r3", quiet=True), "session")
    assert (warehouse.partition_dir("dbt/target", "r3") / dbt_runner.SAVED_PARSE).read_bytes() == b"new"
    assert not [p for p in warehouse.partition_dir("dbt/target", "r3").iterdir() if p.name != dbt_runner.SAVED_PARSE]

    own = saved("own", b"own", 3_000_000_000)
    dbt_runner._seed_saved_parse(RunContext(warehouse, "own", quiet=True), "session")
    assert own.read_bytes() == b"own"
    dbt_runner._seed_saved_parse(RunContext(warehouse, "old", quiet=True), "session")
    assert (warehouse.partition_dir("dbt/target", "old") / dbt_runner.SAVED_PARSE).read_bytes() == b"own"


def test_dbt_sources_are_the_registered_views():
    """Every source the models read is a view the runner registers, and nothing more."""
    root = project.project_dir()
    declared = set()
    for path in (root / "models").rglob("_*__sources.yml"):
        for source in yaml.safe_load(path.read_text())["sources"]:
            declared |= {f"{source['schema']}.{t['name']}" for t in source["tables"]}
    assert declared == set(SOURCES)


def test_project_dir_is_the_checkout():
    root = project.project_dir()
    assert (root / "dbt_project.yml").is_file() and (root / "profiles.yml").is_file()
    assert (root / "pipelines" / "transform" / "dbt_runner.py").is_file()


def test_project_dir_env_must_hold_a_project(tmp_path, monkeypatch):
    monkeypatch.setenv(project.PROJECT_ENV, str(tmp_path))
    assert project.project_dir() != tmp_path  # falls back to the checkout
    monkeypatch.setattr(project, "__file__", str(tmp_path / "a" / "b" / "c.py"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StepError, match="dbt project not found"):
        project.project_dir()


def test_dbt_args_keep_everything_under_the_warehouse(warehouse):
    ctx = RunContext(warehouse, "20240101T000000Z", quiet=True)
    args = dbt_runner.dbt_args(ctx, "session")
    assert args[0] == "build"
    opt = {args[i]: args[i + 1] for i in range(1, len(args) - 1)
           if args[i].startswith("--") and not args[i + 1].startswith("--")}
    assert opt["--target"] == "session"
    assert opt["--project-dir"] == opt["--profiles-dir"] == str(project.project_dir())
    assert opt["--target-path"] == str(warehouse.root / "dbt" / "target" / "run_id=20240101T000000Z")
    assert opt["--log-path"] == str(warehouse.root / "logs" / "dbt")
    # no var: a parse holds nothing of the warehouse or the run (run_env)
    assert "--vars" not in args
    assert "--no-send-anonymous-usage-stats" in args


def _result(status, name, message):
    return SimpleNamespace(
        status=SimpleNamespace(value=status), node=SimpleNamespace(resource_type="test", name=name), message=message
    )


def test_failures_name_the_node_and_reason():
    results = SimpleNamespace(
        results=[
            _result("pass", "ok_test", None),
            _result("fail", "kaudit_key_consumer_lag", "Got 2 results,\n configured to fail if != 0"),
            _result("skipped", "later", None),
            _result("error", "broken", "x" * 1000),
        ]
    )
    failures = dbt_runner._failures(results)
    assert failures[0] == "test kaudit_key_consumer_lag fail: Got 2 results, configured to fail if != 0"
    assert len(failures) == 2 and len(failures[1]) < 450


def _event(name, **data):
    return SimpleNamespace(info=SimpleNamespace(name=name), data=SimpleNamespace(**data))


def test_progress_counts_finished_nodes_and_ignores_odd_events(warehouse):
    class Bar:
        def __init__(self):
            self.calls = []

        def update(self, task, **kw):
            self.calls.append(kw)

    bar = Bar()
    progress = dbt_runner._Progress(RunContext(warehouse, "r1", quiet=True), bar=bar, task=1)
    progress(_event("LogStartLine", total=2))
    node = SimpleNamespace(unique_id="model.kaudit.consumer_lag", node_status="success", node_name="consumer_lag")
    progress(_event("NodeFinished", node_info=node))
    progress(_event("NodeFinished"))  # no node_info: ignored, never raises
    progress(SimpleNamespace())
    assert progress.finished == [("model.kaudit.consumer_lag", "success")]
    assert bar.calls == [{"total": 2}, {"advance": 1, "description": "dbt consumer_lag success"}]
