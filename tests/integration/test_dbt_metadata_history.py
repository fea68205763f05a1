"""Real dbt (dbt-spark session adapter) on real local Spark over a KRaft metadata log made by the
independent encoder (``testkit.kraft``) and read by ``kaudit extract kraft``: the
``metadata_history`` mart and its unit tests. Expected rows come from what the test wrote."""

from __future__ import annotations

import datetime as dt

import pytest
from test_dbt_build import read_mart  # (tests/integration)

from pipelines.context import RunContext
from pipelines.kraft.extract import extract_kraft
from pipelines.transform.dbt_runner import run_dbt
from testkit import kraft as B

pytestmark = pytest.mark.integration

T1, T2, T3 = B.topic_uuid(1), B.topic_uuid(2), B.topic_uuid(3)
U = B.uuid_text


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def metadata_log(root):
    """A snapshot at offset 6 (brokers 1, 2; 'orders' with one partition led by 1, ISR [1,2]),
    then a log; returns the dir and the events the log holds, as the mart should show them."""
    d = root / "__cluster_metadata-0"
    d.mkdir(parents=True)
    image = [B.feature_level("metadata.version", 21), B.register_broker(1, fenced=False),
             B.register_broker(2, fenced=False, port=9093), B.topic("orders", T1),
             B.partition(T1, 0, [1, 2], version=1), B.config(2, "orders", "min.insync.replicas", "2")]
    (d / B.snapshot_name(6, 1)).write_bytes(B.snapshot_bytes(image, last_contained_ts=1_750_000_000_000))
    log, events = B.Log(start_offset=6), []

    def ev(offset, event, **cols):
        events.append({"metadata_offset": offset, "event_at": _ts(log.now), "event": event, **cols})

    log.control(B.leader_change(3000, [3000]))
    log.append(B.topic("old", T2), B.partition(T2, 0, [1]))
    ev(7, "topic_created", topic_id=U(T2), topic="old")
    ev(8, "partition_created", topic_id=U(T2), topic="old", partition=0, leader=1, isr="[1]", isr_size=1)
    log.append(B.remove_topic(T2))
    ev(9, "topic_deleted", topic_id=U(T2), topic="old")
    log.append(B.topic("old", T3), B.partition(T3, 0, [2]))
    ev(10, "topic_recreated", topic_id=U(T3), topic="old", previous_topic_id=U(T2))
    ev(11, "partition_created", topic_id=U(T3), topic="old", partition=0, leader=2, isr="[2]", isr_size=1)
    log.append(B.partition_change(T1, 0, leader=2, isr=[2]))
    change = {"topic_id": U(T1), "topic": "orders", "partition": 0, "leader": 2, "previous_leader": 1, "isr": "[2]",
              "previous_isr": "[1,2]", "isr_size": 1}
    ev(12, "leader_changed", **change)
    ev(12, "isr_changed", **change)
    log.append(B.config(4, "", "ssl.keystore.password", "hunter2"), B.config(2, "orders", "min.insync.replicas", None))
    ev(13, "config_set", resource_type="broker", resource_name="", config_name="ssl.keystore.password",
       config_value="[redacted]")
    ev(14, "config_deleted", resource_type="topic", resource_name="orders", config_name="min.insync.replicas",
       previous_config_value="2")
    log.append(B.broker_registration_change(2, fenced=1))
    ev(15, "broker_fenced", broker_id=2, broker_epoch=10)
    log.append(B.begin_transaction("t"), B.partition_change(T1, 0, isr=[1, 2]), B.unfence_broker(2))
    log.append(B.abort_transaction("no"))  # 16-19: never happened
    log.append(B.register_broker(3, epoch=30), B.unfence_broker(3, epoch=30), B.unregister_broker(1))
    for offset, event, broker, epoch in ((20, "broker_registered", 3, 30), (21, "broker_unfenced", 3, 30),
                                         (22, "broker_unregistered", 1, 10)):
        ev(offset, event, broker_id=broker, broker_epoch=epoch)
    log.write(d / B.segment_name(6))
    return d, events


def test_metadata_history_mart(spark, warehouse, tmp_path):
    d, expected = metadata_log(tmp_path)
    ctx = RunContext(warehouse, "k1", quiet=True)
    extract_kraft(ctx, [d])
    run_dbt(ctx, select=["+metadata_history"], unit_tests=True)

    rows = sorted(read_mart(warehouse, "marts/metadata_history"), key=lambda r: (r["metadata_offset"], r["event"]))
    assert {r["run_id"] for r in rows} == {"k1"}
    shown = [{k: v for k, v in r.items() if v is not None and k not in ("run_id", "record_type", "replicas")}
             for r in rows]
    assert shown == sorted(expected, key=lambda r: (r["metadata_offset"], r["event"]))
