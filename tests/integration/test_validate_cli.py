"""`kaudit validate` end to end: tiny run tables (warehouse API, tables.py schemas; marts
written with pyarrow at their mart paths) with planted faults are flagged exactly, with their
failing rows; a clean run passes and `--strict` exits 0. Real Spark, real GX."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gx_oracle import check_results_table  # (tests/integration)

from pipelines.cli import main
from pipelines.quality.marts import MARTS
from pipelines.quality.spec import load_suites
from pipelines.warehouse.tables import SCHEMAS

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _write(warehouse, run_id, table, rows, step="main"):
    schema = SCHEMAS[table]
    warehouse.write_table(table, run_id, pa.Table.from_pylist(rows, schema=schema), step=step)


def _write_mart(warehouse, run_id, name, rows):
    warehouse.write_table(f"marts/{name}", run_id, pa.Table.from_pylist(rows, schema=MARTS[name]))


def _znode(path, data):
    return dict(source="snapshot", path=path, data=data, czxid=1, mzxid=2, pzxid=1, ctime=T0, mtime=T0,
                version=0, cversion=0, aversion=0, ephemeral_owner=0, data_length=len(data or b""), num_children=0)


def _audit(source, group, p, expected, observed, status, broker_id=None):
    return dict(source=source, group_id=group, topic="t", partition=p, broker_id=broker_id,
                expected_owner=expected, observed_owners=observed, status=status)


def write_run(warehouse, run_id, faulty: bool):
    """A small ZooKeeper + Kafka run; ``faulty`` plants one fault per expectation."""
    bad = faulty
    _write(warehouse, run_id, "core/brokers",
           [dict(broker_id=1, host="h1", port=9092, endpoints=["PLAINTEXT://h1:9092"]),
            dict(broker_id=2, host="h2", port=9092, endpoints=["PLAINTEXT://h2:9092"])]
           + ([dict(broker_id=2, host="h2b", port=9093, endpoints=[])] if bad else []))
    _write(warehouse, run_id, "core/topic_partitions", [
        dict(topic="t", partition=0, broker_id=None, replicas=[1, 2], leader=1, leader_epoch=3, isr=[1, 2]),
        dict(topic="t", partition=1, broker_id=None, replicas=[1, 2], leader=2, leader_epoch=1,
             isr=[1] if bad else [2, 1]),
        dict(topic="t", partition=2, broker_id=None, replicas=[9, 1], leader=9 if bad else 1, leader_epoch=0,
             isr=[9, 1]),
        dict(topic="old", partition=0, broker_id=1, replicas=None, leader=None, leader_epoch=None, isr=None),
    ])
    _write(warehouse, run_id, "core/cluster", [
        dict(cluster_id="bad id!" if bad else "Xa3_-kd9QWer7tyuiOPa1b", controller_id=1,
             pending_topic_deletions=["old-topic"] if bad else [])])
    _write(warehouse, run_id, "core/consumer_registrations", [
        dict(group_id="g-zk", consumer_id="c1", topic="t", streams=1),
        dict(group_id="g-zk", consumer_id="c2", topic="t", streams=1),
    ])
    _write(warehouse, run_id, "core/partition_owners", [
        dict(group_id="g-zk", topic="t", partition=0, broker_id=None, owner="c1-0"),
        dict(group_id="g-zk", topic="t", partition=1, broker_id=None, owner="c1-0"),
        dict(group_id="g-zk", topic="t", partition=2, broker_id=None, owner="ghost-0" if bad else "c2-0"),
        dict(group_id="g-zk", topic="t", partition=3, broker_id=None, owner="c2-0"),
    ] + ([dict(group_id="g-zk", topic="t", partition=1, broker_id=None, owner="c2-0")] if bad else []))
    _write(warehouse, run_id, "core/assignment_audit", [
        _audit("zookeeper", "g-zk", 0, "c1-0", ["c1-0"], "ok"),
        _audit("zookeeper", "g-zk", 1, "c1-0", ["c1-0", "c2-0"] if bad else ["c1-0"],
               "duplicate_owner" if bad else "ok"),
        _audit("zookeeper", "g-zk", 2, "c2-0", ["ghost-0"] if bad else ["c2-0"], "unknown_owner" if bad else "ok"),
        _audit("zookeeper", "g-zk", 3, "c2-0", ["c2-0"], "ok"),
        _audit("kafka", "g-k", 0, "m1", ["m1"], "ok"),
        _audit("kafka", "g-k", 1, "m1", ["m2"] if bad else ["m1"], "wrong_owner" if bad else "ok"),
    ])
    _write(warehouse, run_id, "raw/group_metadata", [
        dict(group_id="g-k", generation=g, protocol_type="consumer", protocol="range", leader="m1",
             state_timestamp=T0, is_tombstone=False, value_version=3, offsets_partition=7, log_offset=lo,
             segment_file="00000000000000000000.log") for g, lo in ((1, 4), (2, 10))
    ])
    _write(warehouse, run_id, "raw/group_members", [
        dict(group_id="g-k", generation=2, offsets_partition=7, log_offset=10, member_id=m, group_instance_id=None,
             client_id="app", client_host="/10.0.0.1", session_timeout_ms=10000, rebalance_timeout_ms=30000,
             subscribed_topics=["t"]) for m in ("m1", "m2")
    ] + [dict(group_id="g-k", generation=1, offsets_partition=7, log_offset=4, member_id="m-old",
              group_instance_id=None, client_id="app", client_host="/10.0.0.1", session_timeout_ms=10000,
              rebalance_timeout_ms=30000, subscribed_topics=["t"])])
    commits = [
        dict(group_id="g-k", topic="t", partition=p, committed_offset=off, leader_epoch=None, metadata="",
             commit_timestamp=T0, expire_timestamp=None, is_tombstone=off is None, key_version=1, value_version=3,
             offsets_partition=7, log_offset=lo, producer_id=-1, is_transactional=False, txn_state=None,
             segment_file="00000000000000000000.log")
        for p, off, lo in ((0, 60, 5), (0, 50, 7), (1, 120, 8), (2, None, 9), (3, -5 if bad else 5, 11))
    ]
    _write(warehouse, run_id, "raw/offset_commits", commits)
    _write(warehouse, run_id, "raw/znodes", [
        _znode("/consumers/g-zk/offsets/t/0", b"42"),
        _znode("/consumers/g-zk/offsets/t/1", b"7\n" if bad else b"7"),
        _znode("/consumers/g-zk/ids/c1", b'{"version":1,"subscription":{"t":1}}'),
    ], step="zk-snapshot")
    # a clean extract still writes its (empty) quarantine and coordinator records
    _write(warehouse, run_id, "raw/quarantine",
           [dict(source="offsets", location="00000000000000000000.log:4096", reason="CRC mismatch", raw=b"\x00")]
           if bad else [], step="offsets")
    _write(warehouse, run_id, "raw/coordinator_records",
           [dict(key_type=9, group_id=None, key=b"\x00\x09", value=b"\x01", offsets_partition=7, log_offset=12,
                 segment_file="00000000000000000000.log")] if bad else [])
    _write_mart(warehouse, run_id, "consumer_lag", [
        dict(source="kafka", group_id="g-k", topic="t", partition=0, committed_offset=50, log_end_offset=100, lag=50,
             committed_at=T0),
        dict(source="kafka", group_id="g-k", topic="t", partition=1, committed_offset=120 if bad else 90,
             log_end_offset=100, lag=-20 if bad else 10, committed_at=T0),
        dict(source="zookeeper", group_id="g-zk", topic="t", partition=0, committed_offset=42, log_end_offset=None,
             lag=None, committed_at=T0),
    ])
    _write_mart(warehouse, run_id, "offset_regressions", [
        dict(group_id="g-k", topic="t", partition=0, log_offset=7, previous_committed_offset=60,
             committed_offset=50, regressed_by=10, committed_at=T0)] if bad else [])


# Each check, the failing rows it must export (a key column's values).
# checks with no data in these runs: the KRaft suite's (a ZooKeeper registry, no metadata log),
# the history's (no marts/ownership_history, no log ends or marts/data_loss_risk written) and
# every check of the suites of share and Streams groups, MirrorMaker 2 and the migration (none written)
NO_DATA = {
    "partition_records_name_known_topics", "kraft_partitions_have_a_topic",
    "one_owner_at_every_moment", "no_commit_below_log_start_unflagged",
} | {c.name for s in load_suites() if s.name in ("share_streams", "mm2", "migration") for c in s.checks}
PLANTED = {
    "owners_unique_per_partition": ("owner", ["c1-0", "c2-0"]),
    "zk_owner_znodes_unique": ("owner", ["c1-0", "c2-0"]),
    "owners_are_registered": ("owner", ["ghost-0"]),
    "assignment_status_ok": ("status", ["duplicate_owner", "unknown_owner", "wrong_owner"]),
    "no_offset_regressions": ("committed_offset", [50]),
    "lag_non_negative": ("lag", [-20]),
    "committed_within_log_end": ("committed_offset", [120]),
    "kafka_offsets_non_negative": ("committed_offset", [-5]),
    "zk_offsets_numeric": ("value", ["7\n"]),
    "leader_in_isr": ("partition", [1]),
    "leader_is_registered_broker": ("leader", [9]),
    "broker_ids_unique": ("host", ["h2", "h2b"]),
    "cluster_id_format": ("cluster_id", ["bad id!"]),
    "no_pending_topic_deletions": ("topic", ["old-topic"]),
    "no_quarantined_inputs": ("reason", ["CRC mismatch"]),
    "no_unknown_record_types": ("key_type", [9]),
}
WARNINGS = {"no_pending_topic_deletions", "no_quarantined_inputs", "no_unknown_record_types"}


def _cli(warehouse, run_id, *args):
    with pytest.raises(SystemExit) as exit_:
        main(["--warehouse", str(warehouse.root), "--run-id", run_id, "--spark-master", "local[2]", *args])
    return exit_.value.code


@pytest.fixture(scope="module")
def shared_warehouse(tmp_path_factory):
    """One warehouse for both runs: the second validation reuses the GX project and Data Docs
    site the first one created, as runs of a real warehouse do."""
    from pipelines.warehouse.warehouse import Warehouse

    return Warehouse(tmp_path_factory.mktemp("validate") / "warehouse")


def test_planted_faults_are_flagged_exactly_and_strict_exits_3(spark, shared_warehouse, capsys):
    warehouse = shared_warehouse
    write_run(warehouse, "faulty", faulty=True)
    assert _cli(warehouse, "faulty", "validate", "--strict") == 3
    assert "error-level expectation(s) failed" in capsys.readouterr().err

    part = warehouse.partition_dir("validation", "faulty")
    results = json.loads((part / "results.json").read_text())
    assert {r["expectation"] for r in results if r["success"] is None} == NO_DATA
    results = [r for r in results if r["success"] is not None]
    assert {r["expectation"] for r in results} == set(PLANTED)
    for r in results:
        assert set(r) >= {"suite", "expectation", "success", "unexpected_count", "level", "description"}
        assert r["success"] is False, r
        assert r["level"] == ("warning" if r["expectation"] in WARNINGS else "error"), r
        column, values = PLANTED[r["expectation"]]
        rows = pq.read_table(part / "failures" / f"{r['expectation']}.parquet")
        assert sorted(rows.column(column).to_pylist()) == sorted(values), r["expectation"]
        assert r["unexpected_count"] == len(values), r
        assert "_row" not in rows.column_names

    docs = warehouse.root / "validation" / "data_docs" / "index.html"
    assert docs.exists() and "faulty" in docs.read_text()
    # the same checks as rows of the warehouse table quality/validation_results, as GX returned them
    check_results_table(warehouse, "faulty", PLANTED, NO_DATA)


def test_clean_run_passes_and_strict_exits_0(spark, shared_warehouse):
    warehouse = shared_warehouse
    write_run(warehouse, "clean", faulty=False)
    assert _cli(warehouse, "clean", "validate", "--strict") == 0
    part = warehouse.partition_dir("validation", "clean")
    results = json.loads((part / "results.json").read_text())
    assert {r["expectation"] for r in results if r["success"] is None} == NO_DATA
    assert len(results) == len(PLANTED) + len(NO_DATA)
    assert [r["expectation"] for r in results if r["success"] is False] == []
    assert list((part / "failures").iterdir()) == []
    assert "clean" in (warehouse.root / "validation" / "data_docs" / "index.html").read_text()

    # validated again: the Data Docs get this validation's pages; the earlier ones (this run's
    # first validation's among them) are already there and are not rendered again
    pages = warehouse.root / "validation" / "data_docs" / "validations"
    before = {p: p.stat().st_mtime_ns for p in pages.rglob("*.html")}
    assert any("clean" in p.parts for p in before)
    assert _cli(warehouse, "clean", "validate") == 0
    after = {p: p.stat().st_mtime_ns for p in pages.rglob("*.html")}
    assert {p: after[p] for p in before} == before
    new = set(after) - set(before)
    assert new and all("clean" in p.parts for p in new)
    assert len(new) == len([p for p in before if "clean" in p.parts])  # one page a suite and view, as before


def test_a_big_runs_views_stay_in_spark_with_the_same_results(spark, shared_warehouse, monkeypatch):
    """A small run's views are collected to the driver, a big run's are checkpointed in Spark
    (failing rows by a semi-join on their ids): the same run's data judged both ways gives the
    same results.json and the same failing rows in the same order. The run is made big by the
    size threshold, a parameter."""
    from pipelines.spark import session
    from pipelines.warehouse.reading import run_rows

    warehouse = shared_warehouse
    for run_id in ("as-small", "as-big"):
        write_run(warehouse, run_id, faulty=True)
    assert session.is_small_run(run_rows(warehouse, "as-small"))
    assert _cli(warehouse, "as-small", "validate") == 0
    monkeypatch.setattr(session, "SMALL_RUN_ROWS", 0)
    assert not session.is_small_run(run_rows(warehouse, "as-big"))
    assert _cli(warehouse, "as-big", "validate") == 0

    small, big = (warehouse.partition_dir("validation", r) for r in ("as-small", "as-big"))
    assert (big / "results.json").read_text() == (small / "results.json").read_text()
    assert sorted(p.name for p in (big / "failures").iterdir()) == sorted(f"{c}.parquet" for c in PLANTED)
    for check, (column, values) in PLANTED.items():
        rows = pq.read_table(big / "failures" / f"{check}.parquet")
        assert sorted(rows.column(column).to_pylist()) == sorted(values), check
        assert rows.equals(pq.read_table(small / "failures" / f"{check}.parquet"), check_metadata=True), check


def test_a_run_with_no_data_for_any_check_is_an_error(shared_warehouse, capsys):
    """A built run whose audit is empty and has nothing else: no check can pass (exit 1, no Spark)."""
    warehouse = shared_warehouse
    _write(warehouse, "empty", "core/assignment_audit", [])
    assert _cli(warehouse, "empty", "validate") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "kaudit: run empty: no data for any expectation (core/assignment_audit is empty)"
    assert not warehouse.exists("validation", "empty")
