"""Real dbt (dbt-spark session adapter) on the test session's real local Spark, over tiny
tables written through the warehouse API to an Iceberg warehouse: two runs in a row build the
marts and the ownership history as tables of its catalog; a failing data test becomes a
StepError."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from pipelines.context import RunContext
from pipelines.errors import StepError
from pipelines.transform.dbt_runner import run_dbt
from pipelines.warehouse.tables import SCHEMAS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

UTC = dt.UTC


def at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 1, 1, 10, 0, tzinfo=UTC) + dt.timedelta(minutes=minute)


def commit(group, topic, partition, offset, log_offset, minute, txn_state=None, producer_id=-1):
    return {
        "group_id": group,
        "topic": topic,
        "partition": partition,
        "committed_offset": offset,
        "leader_epoch": None,
        "metadata": "",
        "commit_timestamp": at(minute),
        "expire_timestamp": None,
        "is_tombstone": offset is None,
        "key_version": 1,
        "value_version": 3,
        "offsets_partition": 12,
        "log_offset": log_offset,
        "producer_id": producer_id,
        "is_transactional": txn_state is not None,
        "txn_state": txn_state,
        "segment_file": "__consumer_offsets-12/00000000000000000000.log",
    }


def write(warehouse, table, run_id, rows):
    warehouse.write_table(table, run_id, pa.Table.from_pylist(rows, SCHEMAS[table]))


def read_mart(warehouse, name) -> list[dict]:
    """Every row of table ``name`` (``marts/<model>``) as ``main`` holds it (what an engine reading
    the catalog's current state sees), in a stable order."""
    data = warehouse.catalog.load_table(warehouse.ident(name)).scan().to_arrow()
    return sorted(data.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def first_run_inputs(warehouse, run_id):
    write(
        warehouse,
        "raw/offset_commits",
        run_id,
        [
            # g / t-0: 10, an ABORTED lower commit (no regression), 20, a regular 15 (regression)
            commit("g", "t", 0, 10, 100, 1),
            commit("g", "t", 0, 5, 101, 2, "aborted", producer_id=7),
            commit("g", "t", 0, 20, 103, 3),
            commit("g", "t", 0, 15, 104, 65),
            # g / t-1: a committed transactional commit at a greater log offset than a regular
            # one beats it; a pending one after both is not effective
            commit("g", "t", 1, 40, 105, 5),
            commit("g", "t", 1, 50, 106, 6, "committed", producer_id=8),
            commit("g", "t", 1, 90, 107, 7, "pending", producer_id=9),
            # g / t-2: deleted by a tombstone
            commit("g", "t", 2, 8, 108, 8),
            commit("g", "t", 2, None, 109, 9),
        ],
    )
    write(
        warehouse,
        "raw/log_end_offsets",
        run_id,
        [
            {"topic": "t", "partition": p, "log_start_offset": 0, "log_end_offset": 100, "max_timestamp": at(70)}
            for p in range(3)
        ],
    )
    write(
        warehouse,
        "core/zk_offsets",
        run_id,
        [{"group_id": "g", "topic": "t", "partition": 0, "broker_id": None, "committed_offset": 12, "mtime": at(4)}],
    )
    write(
        warehouse,
        "core/partition_owners",
        run_id,
        [{"group_id": "zg", "topic": "t", "partition": 0, "broker_id": None, "owner": "zg_host-1-aaaa-0"}],
    )


def test_two_runs_build_marts_and_ownership_history(spark, warehouse):
    first_run_inputs(warehouse, "r0")
    # every unit test of the project (theirs is run r1, set by their overrides: not this run's)
    run_dbt(RunContext(warehouse, "r0", quiet=True), unit_tests=True)

    # dbt ran on this process's session (getOrCreate reused it): the marts are tables of its
    # catalog kaudit; the build's branch is published and the session reads main again
    assert spark.catalog.tableExists("kaudit.marts.consumer_lag")
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert spark.conf.get("spark.wap.branch", None) is None
    assert set(warehouse.catalog.load_table(("marts", "consumer_lag")).metadata.refs) == {"main"}

    lag = read_mart(warehouse, "marts/consumer_lag")
    assert [
        (r["source"], r["partition"], r["committed_offset"], r["log_end_offset"], r["lag"], r["run_id"]) for r in lag
    ] == [
        ("kafka", 0, 15, 100, 85, "r0"),
        ("kafka", 1, 50, 100, 50, "r0"),
        ("zookeeper", 0, 12, 100, 88, "r0"),
    ]
    regressions = read_mart(warehouse, "marts/offset_regressions")
    got = [
        (r["log_offset"], r["previous_committed_offset"], r["committed_offset"], r["regressed_by"]) for r in regressions
    ]
    assert got == [(104, 20, 15, 5)]
    drift = read_mart(warehouse, "marts/offset_storage_drift")
    assert [(r["group_id"], r["partition"], r["zk_offset"], r["kafka_offset"], r["drift"]) for r in drift] == [
        ("g", 0, 12, 15, 3),
        ("g", 1, None, 50, None),
    ]
    frequency = read_mart(warehouse, "marts/commit_frequency")
    assert {(r["partition"], r["window_start"].hour, r["commits"]) for r in frequency} == {
        (0, 10, 2),
        (0, 11, 1),
        (1, 10, 2),
        (2, 10, 1),
    }
    status = {r["partition"]: r for r in read_mart(warehouse, "marts/consumer_lag_status")}
    assert set(status) == {0, 1}  # t-2 ended with a tombstone
    assert status[0]["evaluated_at"] == at(70)  # the capture's clock: the newest input timestamp
    # t-0 went 10, 20, 15: back, but not below the window's first offset, and lag decreased;
    # t-1's last commit (10:06) is older than its window's span (1 minute) at 11:10
    assert [
        (p, s["status"], s["group_status"], s["window_commits"], s["current_lag"]) for p, s in sorted(status.items())
    ] == [
        (0, "OK", "STOP", 3, 85),
        (1, "STOP", "STOP", 2, 50),
    ]

    # Run 2: zg's partition changed owner; no log ends and no Kafka records were extracted.
    write(
        warehouse,
        "core/partition_owners",
        "r2",
        [{"group_id": "zg", "topic": "t", "partition": 0, "broker_id": None, "owner": "zg_host-2-bbbb-0"}],
    )
    write(
        warehouse,
        "core/zk_offsets",
        "r2",
        [{"group_id": "g", "topic": "t", "partition": 0, "broker_id": None, "committed_offset": 30, "mtime": at(90)}],
    )
    run_dbt(RunContext(warehouse, "r2", quiet=True), select=["+snap_partition_ownership", "+consumer_lag"])
    # r0's build started from the parse `make` saved at install, r2's from r0's (nothing of a
    # warehouse or a run is in a parse): no full parse
    from pipelines.transform.dbt_runner import INSTALL_PARSES, SAVED_PARSE

    installed = (INSTALL_PARSES / "session" / SAVED_PARSE).is_file()
    log = (warehouse.root / "logs" / "dbt" / "dbt.log").read_text().split("Running with dbt=")
    assert [("full parse" in invocation) for invocation in log[1:]] == [not installed, False]

    # the history is the Iceberg table kaudit.snapshots.<name> (dbt's snapshot: MERGE)
    history = sorted(
        (r.asDict() for r in spark.sql("select * from kaudit.snapshots.snap_partition_ownership").collect()),
        key=lambda r: r["dbt_valid_from_run_id"],
    )
    assert [(r["owner"], r["dbt_valid_from_run_id"], r["dbt_valid_to_run_id"]) for r in history] == [
        ("zg_host-1-aaaa-0", "r0", "r2"),
        ("zg_host-2-bbbb-0", "r2", None),
    ]
    old, new = history
    assert old["dbt_valid_to"] == new["dbt_valid_from"]

    # r2's partition was added, r0's kept; the missing log ends make r2's lag unknown
    lag = read_mart(warehouse, "marts/consumer_lag")
    assert sorted({r["run_id"] for r in lag}) == ["r0", "r2"]
    assert [(r["source"], r["committed_offset"], r["lag"]) for r in lag if r["run_id"] == "r2"] == [
        ("zookeeper", 30, None)
    ]
    assert spark.sql("select count(*) as n from kaudit.marts.consumer_lag").first().n == 4


def test_a_rebuild_replaces_the_runs_partition(spark, warehouse):
    """Building a run again replaces its partition of a mart, and the intermediate tables (the
    build's working tables in the catalog) hold the new build's rows only, in one snapshot: the
    previous build's table and files are gone, nothing accumulates."""
    first_run_inputs(warehouse, "again")
    # first_run_inputs: Kafka's latest effective commits (15 on t-0: the aborted 5 is not one;
    # 50 on t-1: the committed transaction's, the pending 90 is not yet; t-2's tombstone
    # deletes it) and ZooKeeper's offset znode of t-0
    expected = [("kafka", 0, 15), ("kafka", 1, 50), ("zookeeper", 0, 12)]
    for _ in range(2):
        run_dbt(RunContext(warehouse, "again", quiet=True), select=["+consumer_lag"])
        rows = read_mart(warehouse, "marts/consumer_lag")
        assert sorted((r["source"], r["partition"], r["committed_offset"]) for r in rows) == expected
        working = warehouse.catalog.load_table(("intermediate", "int_committed_offsets"))
        rows = working.scan().to_arrow().to_pylist()
        assert sorted((r["source"], r["partition"], r["committed_offset"]) for r in rows) == expected
        assert len(working.metadata.snapshots) == 1


def test_failed_data_test_is_a_step_error(spark, warehouse):
    row = {"group_id": "g", "topic": "t", "partition": 0, "broker_id": None, "committed_offset": 1, "mtime": at(0)}
    write(warehouse, "core/zk_offsets", "bad", [row, {**row, "committed_offset": 2}])
    with pytest.raises(StepError, match=r"dbt build failed: test kaudit_key_stg_zookeeper__offsets.* fail"):
        run_dbt(RunContext(warehouse, "bad", quiet=True), select=["stg_zookeeper__offsets"])


def _declare(columns: list[dict], change: str) -> None:
    if change == "missing column":
        columns.append({"name": "origin", "data_type": "string"})
    else:  # "wrong type": commits is bigint; `long` is Spark's own name for it, `string` is not
        for column in columns:
            if column["name"] == "commits":
                column["data_type"] = "long"
            elif column["name"] == "first_commit_at":
                column["data_type"] = "string"


@pytest.mark.parametrize("change", ["missing column", "wrong type"])
def test_a_mart_not_matching_its_contract_fails_the_build(spark, tmp_path, monkeypatch, change):
    """The marts' contracts are enforced: a declared column the model does not build, or a
    declared type it does not build, stops the build before the mart is written. Types are
    compared as Spark names them (a declared `long` is the model's `bigint`)."""
    from pipelines.warehouse.warehouse import Warehouse

    # a path of its own per case: both cases' tmp_path is the same directory once the first
    # passed (and was removed), and the session's catalog connection of the first case's
    # SQLite file would still be open on the removed file
    warehouse = Warehouse(tmp_path / f"warehouse-{change.replace(' ', '-')}")
    project = tmp_path / "project"
    project.mkdir()
    for name in ("dbt_project.yml", "profiles.yml"):
        shutil.copy(REPO / name, project / name)
    for folder in ("models", "macros", "snapshots"):
        shutil.copytree(REPO / folder, project / folder)
    declaration = project / "models" / "marts" / "_marts__models.yml"
    marts = yaml.safe_load(declaration.read_text())
    (frequency,) = [m for m in marts["models"] if m["name"] == "commit_frequency"]
    _declare(frequency["columns"], change)
    declaration.write_text(yaml.safe_dump(marts, sort_keys=False))
    monkeypatch.setenv("KAUDIT_DBT_PROJECT_DIR", str(project))

    first_run_inputs(warehouse, "contract")
    with pytest.raises(StepError, match=r"model commit_frequency error: .*enforced contract that failed"):
        run_dbt(RunContext(warehouse, "contract", quiet=True), select=["+commit_frequency"])
    assert not warehouse.catalog.table_exists(("marts", "commit_frequency"))
    # dbt's table of mismatches (in the log once or more: the error, the summary)
    mismatches = {
        " ".join(line.strip(" |").split())
        for line in (warehouse.root / "logs" / "dbt" / "dbt.log").read_text().splitlines()
        if line.rstrip(" |").endswith(("data type mismatch", "missing in definition", "missing in contract"))
    }
    if change == "missing column":
        assert mismatches == {"origin | | string | missing in definition"}
    else:
        assert mismatches == {"first_commit_at | timestamp | string | data type mismatch"}
