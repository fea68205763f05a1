"""``kaudit extract kraft`` through the real CLI, and ``build`` (real local Spark) filling the core
registry tables of a KRaft-only run; the metadata made by the independent encoder."""

from __future__ import annotations

import pytest

from pipelines.cli import main
from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit import kraft as B

pytestmark = pytest.mark.integration

T1, T2 = B.topic_uuid(1), B.topic_uuid(2)
U = B.uuid_text


def _kaudit(*args: str) -> int:
    with pytest.raises(SystemExit) as ex:
        main(list(args))
    return ex.value.code


def _metadata_dir(root):
    """Two brokers (2 fenced), topic 'orders' (2 partitions, p1 led by 2 after a change) and a
    deleted topic 'old'; snapshot at offset 3, then the log."""
    d = root / "kraft-logs" / "__cluster_metadata-0"
    image = [B.feature_level("metadata.version", 21), B.register_broker(1, rack="r1", fenced=False),
             B.register_broker(2, rack="r2", fenced=False, port=9093)]
    d.mkdir(parents=True)
    (d / B.snapshot_name(3, 1)).write_bytes(B.snapshot_bytes(image, last_contained_ts=1_750_000_000_000))
    log = B.Log(start_offset=3)
    log.control(B.leader_change(3000, [3000]))
    log.append(B.topic("old", T2), B.partition(T2, 0, [1]))
    log.append(B.remove_topic(T2))
    log.append(B.topic("orders", T1), B.partition(T1, 0, [1, 2], version=1), B.partition(T1, 1, [1, 2], version=1))
    log.append(B.partition_change(T1, 1, leader=2, isr=[2]), B.fence_broker(2))
    log.write(d / B.segment_name(3))
    (d.parent / "meta.properties").write_text("cluster.id=kraft-test-cluster\n")
    return d


def test_extract_kraft_cli(tmp_path, capsys):
    d = _metadata_dir(tmp_path)
    wh = tmp_path / "wh"
    assert _kaudit("--warehouse", str(wh), "--run-id", "k1", "extract", "kraft", str(d.parent)) == 0
    out = capsys.readouterr().err
    assert "snapshot 00000000000000000003-0000000001.checkpoint" in out
    assert "2 brokers, 1 topics, 2 partitions" in out
    w = Warehouse(wh)
    assert read_arrow(w, "raw/metadata_records", "k1").num_rows == 5 + 9  # header, 3 records, footer; the log
    # a target before the snapshot's end: offsets 0..2 are in no file -> a quarantined gap
    assert _kaudit("--warehouse", str(wh), "--run-id", "k2", "extract", "kraft", str(d), "--at-offset", "1") == 0
    q = read_arrow(w, "raw/quarantine", "k2").to_pylist()
    assert [r["reason"].split(":")[0] for r in q] == ["MissingRecords"]


def test_extract_kraft_cli_errors(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    wh = str(tmp_path / "wh")
    assert _kaudit("--warehouse", wh, "extract", "kraft", str(empty)) == 1
    err = capsys.readouterr().err.strip().splitlines()  # the run's line, then the error's
    assert [line for line in err if line.startswith("kaudit:")] == [err[-1]] and "Traceback" not in "".join(err)
    assert err[-1].startswith(f"kaudit: {empty}: no metadata segments") and "expected a KRaft metadata log" in err[-1]
    assert not Warehouse(wh).run_ids("raw/metadata_records")  # nothing half-written
    assert _kaudit("--warehouse", wh, "extract", "kraft", str(empty), "--at-offset", "1", "--at-time", "2") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not both" in err[0]
    assert _kaudit("--warehouse", wh, "extract", "kraft", str(empty), "--at-time", "yesterday") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--at-time" in err[0]


def test_build_fills_core_registry_from_kraft(spark, tmp_path):
    d = _metadata_dir(tmp_path)
    wh = Warehouse(tmp_path / "wh")
    assert _kaudit("--warehouse", str(wh.root), "--run-id", "k1", "extract", "kraft", str(d)) == 0
    build_core(RunContext(wh, "k1", quiet=True), {})
    brokers = sorted(
        read_arrow(wh, "core/brokers", "k1").drop_columns(["run_id"]).to_pylist(), key=lambda b: b["broker_id"]
    )
    assert brokers == [
        dict(broker_id=1, host="127.0.0.1", port=9092, endpoints=["PLAINTEXT://127.0.0.1:9092"], rack="r1",
             fenced=False),
        dict(broker_id=2, host="127.0.0.1", port=9093, endpoints=["PLAINTEXT://127.0.0.1:9093"], rack="r2",
             fenced=True),
    ]
    parts = sorted(read_arrow(wh, "core/topic_partitions", "k1").drop_columns(["run_id"]).to_pylist(),
                   key=lambda p: p["partition"])
    zero = U(B.uuid.UUID(int=0))
    assert parts == [
        dict(topic="orders", partition=0, broker_id=None, replicas=[1, 2], leader=1, leader_epoch=0, isr=[1, 2],
             topic_id=U(T1), directories=[zero, zero], eligible_leader_replicas=None),
        dict(topic="orders", partition=1, broker_id=None, replicas=[1, 2], leader=2, leader_epoch=1, isr=[2],
             topic_id=U(T1), directories=[zero, zero], eligible_leader_replicas=None),
    ]
    cluster = read_arrow(wh, "core/cluster", "k1").drop_columns(["run_id"]).to_pylist()
    assert cluster == [dict(cluster_id="kraft-test-cluster", controller_id=3000, pending_topic_deletions=[])]
