"""A real ZooKeeper tree with planted ownership faults -> extract_live -> build_core gives the
planted statuses exactly, with range (a wildcard group too) and with a round-robin group; a run
with only Kafka group tables builds too; a build whose owners scan fails leaves the run's
earlier tables as they were."""

import json
import uuid
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from kazoo.client import KazooClient

from pipelines.context import RunContext
from pipelines.spark.build import build_core
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import (
    RAW_GROUP_ASSIGNMENTS,
    RAW_GROUP_MEMBERS,
    RAW_GROUP_METADATA,
)

pytestmark = pytest.mark.integration

TS = datetime(2024, 1, 1, tzinfo=UTC)

TREE = {
    # 0.8+ layout: topic "orders", 4 partitions; group g08 with two one-stream consumers
    "/brokers/ids/1": json.dumps({"host": "b1", "port": 9092, "endpoints": ["PLAINTEXT://b1:9092"], "version": 4}),
    "/brokers/topics/orders": json.dumps({"version": 1, "partitions": {str(p): [1] for p in range(4)}}),
    "/consumers/g08/ids/g08_c1": json.dumps({"version": 1, "subscription": {"orders": 1}, "pattern": "static"}),
    "/consumers/g08/ids/g08_c2": json.dumps({"version": 1, "subscription": {"orders": 1}, "pattern": "static"}),
    # range: g08_c1-0 <- 0, 1; g08_c2-0 <- 2, 3
    "/consumers/g08/owners/orders/0": "g08_c1-0",  # ok
    "/consumers/g08/owners/orders/1": "g08_c2-0",  # wrong owner
    "/consumers/g08/owners/orders/2": "ghost-0",  # unknown owner
    # orders/3 has no owner                        # unowned
    "/consumers/g08/owners/orders/7": "g08_c1-0",  # unexpected partition
    "/consumers/g08/offsets/orders/0": "42",
    "/consumers/g08/offsets/orders/1": "forty-two",  # quarantined
    # 0.7 layout: topic "old" on brokers 1 (2 partitions) and 2 (1); group g07, one 2-stream consumer
    "/brokers/topics/old/1": "2",
    "/brokers/topics/old/2": "1",
    "/consumers/g07/ids/g07_c": '{ "old": 2 }',
    # range over "1-0","1-1","2-0" and threads g07_c-0, g07_c-1: 2 + 1
    "/consumers/g07/owners/old/1-0": "g07_c-0",
    "/consumers/g07/owners/old/1-1": "g07_c-0",
    "/consumers/g07/owners/old/2-0": "g07_c-0",  # wrong owner (g07_c-1 expected)
    "/consumers/g07/offsets/old/1-0": "5",
    # a wildcard consumer (white_list "ord.*": reads orders, not old), one stream: gw_c-0 <- 0..3
    "/consumers/gw/ids/gw_c": json.dumps({"version": 1, "subscription": {"ord.*": 1}, "pattern": "white_list"}),
    "/consumers/gw/owners/orders/0": "gw_c-0",  # ok
    "/consumers/gw/owners/orders/1": "gw_c-1",  # unknown owner (one stream: no gw_c-1)
    # orders/2 and orders/3 have no owner        # unowned
}

WANT = {
    ("g08", "orders", 0, None): ("g08_c1-0", ["g08_c1-0"], "ok"),
    ("g08", "orders", 1, None): ("g08_c1-0", ["g08_c2-0"], "wrong_owner"),
    ("g08", "orders", 2, None): ("g08_c2-0", ["ghost-0"], "unknown_owner"),
    ("g08", "orders", 3, None): ("g08_c2-0", [], "unowned"),
    ("g08", "orders", 7, None): (None, ["g08_c1-0"], "unexpected_partition"),
    ("g07", "old", 0, 1): ("g07_c-0", ["g07_c-0"], "ok"),
    ("g07", "old", 1, 1): ("g07_c-0", ["g07_c-0"], "ok"),
    ("g07", "old", 0, 2): ("g07_c-1", ["g07_c-0"], "wrong_owner"),
    ("gw", "orders", 0, None): ("gw_c-0", ["gw_c-0"], "ok"),
    ("gw", "orders", 1, None): ("gw_c-0", ["gw_c-1"], "unknown_owner"),
    ("gw", "orders", 2, None): ("gw_c-0", [], "unowned"),
    ("gw", "orders", 3, None): ("gw_c-0", [], "unowned"),
}


def _audit(warehouse, run_id):
    rows = read_arrow(warehouse, "core/assignment_audit", run_id).to_pylist()
    return {
        (r["group_id"], r["topic"], r["partition"], r["broker_id"]):
            (r["expected_owner"], r["observed_owners"], r["status"])
        for r in rows
    }


def test_planted_zookeeper_faults_are_found_exactly(spark, zk_server, warehouse):
    extract_live = pytest.importorskip("pipelines.zookeeper.extract").extract_live
    chroot = f"/kaudit-spark-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zk_server.hosts)
    zk.start(timeout=30)
    try:
        for path, value in TREE.items():
            zk.create(chroot + path, value.encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()

    ctx = RunContext(warehouse, "zk-only", quiet=True)
    extract_live(ctx, hosts=zk_server.hosts, chroot=chroot)
    counts = build_core(ctx, {})

    assert _audit(warehouse, "zk-only") == WANT
    assert counts["core/assignment_audit"] == len(WANT)
    quarantine = read_arrow(warehouse, "raw/quarantine", "zk-only").to_pylist()
    assert [(q["source"], q["location"], q["reason"]) for q in quarantine if q["source"] == "registry"] == [
        ("registry", "/consumers/g08/offsets/orders/1", "non-numeric offset")
    ]
    offsets = read_arrow(warehouse, "core/zk_offsets", "zk-only").to_pylist()
    assert sorted((o["group_id"], o["partition"], o["broker_id"], o["committed_offset"]) for o in offsets) == [
        ("g07", 0, 1, 5),
        ("g08", 0, None, 42),
    ]
    assert read_arrow(warehouse, "core/expected_assignment", "zk-only").num_rows == 11
    assert read_arrow(warehouse, "core/cluster", "zk-only").num_rows == 1


def test_a_roundrobin_group_next_to_range_groups(spark, warehouse):
    """g08 configured for round-robin: partitions dealt in order of the Java hashCode of
    "[orders,p]" (0, 1, 2, 3 here) over g08_c1-0, g08_c2-0; g07 and gw stay range."""
    from pipelines.warehouse.tables import RAW_ZNODES
    from testkit.znodes import znode_rows

    run = "roundrobin"
    warehouse.write_table("raw/znodes", run, znode_rows(TREE, "live"), RAW_ZNODES, step="zk")
    build_core(RunContext(warehouse, run, quiet=True), {"g08": "roundrobin"})
    g08 = {
        ("g08", "orders", 0, None): ("g08_c1-0", ["g08_c1-0"], "ok"),
        ("g08", "orders", 1, None): ("g08_c2-0", ["g08_c2-0"], "ok"),
        ("g08", "orders", 2, None): ("g08_c1-0", ["ghost-0"], "unknown_owner"),
        ("g08", "orders", 3, None): ("g08_c2-0", [], "unowned"),
        ("g08", "orders", 7, None): (None, ["g08_c1-0"], "unexpected_partition"),
    }
    assert _audit(warehouse, run) == {**{k: v for k, v in WANT.items() if k[0] != "g08"}, **g08}
    expected = read_arrow(warehouse, "core/expected_assignment", run).to_pylist()
    assert {(e["group_id"], e["assignor"]) for e in expected} == {
        ("g08", "roundrobin"), ("g07", "range"), ("gw", "range")}


def test_a_run_with_only_kafka_group_tables(spark, warehouse):
    run = "kafka-only"
    key = {"group_id": "kg", "generation": 3, "offsets_partition": 5, "log_offset": 100}
    warehouse.write_table(
        "raw/group_metadata",
        run,
        pa.Table.from_pylist(
            [
                {**key, "protocol_type": "consumer", "protocol": "range", "leader": "m1", "state_timestamp": TS,
                 "is_tombstone": False, "value_version": 3, "segment_file": "s.log"},
            ],
            schema=RAW_GROUP_METADATA,
        ),
        step="offsets",
    )
    members = [
        {**key, "member_id": m, "group_instance_id": None, "client_id": "c", "client_host": "/h",
         "session_timeout_ms": 1, "rebalance_timeout_ms": 1, "subscribed_topics": ["clicks"]}
        for m in ("m1", "m2")
    ]
    warehouse.write_table(
        "raw/group_members", run, pa.Table.from_pylist(members, schema=RAW_GROUP_MEMBERS), step="offsets"
    )
    assigned = [("m1", 0), ("m1", 1), ("m1", 2), ("m2", 2)]  # m1 took m2's partition 2 as well
    warehouse.write_table(
        "raw/group_assignments",
        run,
        pa.Table.from_pylist([{**key, "member_id": m, "topic": "clicks", "partition": p} for m, p in assigned],
                             schema=RAW_GROUP_ASSIGNMENTS),
        step="offsets",
    )
    ctx = RunContext(warehouse, run, quiet=True)
    # no raw/log_end_offsets and no znodes: clicks has no known partitions at all
    build_core(ctx, {})
    assert _audit(warehouse, run) == {
        ("kg", "clicks", 0, None): (None, ["m1"], "unexpected_partition"),
        ("kg", "clicks", 1, None): (None, ["m1"], "unexpected_partition"),
        ("kg", "clicks", 2, None): (None, ["m1", "m2"], "duplicate_owner"),
    }
    assert read_arrow(warehouse, "core/cluster", run).num_rows == 0
    assert read_arrow(warehouse, "core/brokers", run).num_rows == 0
    _skipped_group_tables_are_what_their_modules_give(spark, ctx)


def _skipped_group_tables_are_what_their_modules_give(spark, ctx):
    """A run without share or streams group records: the build wrote their tables empty without
    planning them; the modules' own frames, computed anyway, are the same tables, without rows."""
    from pipelines.spark import build, share_groups, streams_groups
    from pipelines.spark.io import read_spark

    topic_parts = read_spark(spark, ctx.warehouse, "core/topic_partitions", ctx.run_id, with_run_id=False)
    for module in (share_groups, streams_groups):
        frames = module.core_frames(spark, ctx, topic_parts)
        assert set(frames) == set(build.module_tables(module))
        assert {t: f.count() for t, f in frames.items()} == {t: 0 for t in frames}
        assert {t: read_arrow(ctx.warehouse, t, ctx.run_id).num_rows for t in frames} == {t: 0 for t in frames}


def test_a_failing_chain_rolls_the_whole_build_back(spark, warehouse, monkeypatch):
    """The owners scan fails while the other chains run: the build raises it, every chain
    has stopped, and the run keeps the tables of its previous build, with no staging left."""
    from pyspark.sql import functions as F

    from pipelines.spark import registry
    from pipelines.warehouse.tables import CORE, RAW_ZNODES
    from testkit.znodes import znode_rows

    run = "rollback"
    warehouse.write_table("raw/znodes", run, znode_rows(TREE, "live"), RAW_ZNODES, step="zk")
    ctx = RunContext(warehouse, run, quiet=True)
    before = build_core(ctx, {})

    def failing_owners(z):
        return registry.parse_owners(z).withColumn("owner", F.assert_true(F.lit(False), "planted owners failure"))

    monkeypatch.setitem(registry.BULK_PARSERS, "core/partition_owners", failing_owners)
    with pytest.raises(Exception, match="planted owners failure"):
        build_core(ctx, {})
    assert {t: read_arrow(warehouse, t, run).num_rows for t in CORE} == {t: before[t] for t in CORE}
    assert not [p for t in CORE for p in warehouse.table_dir(t).iterdir() if p.name.startswith(".staging")]


def test_a_second_build_in_one_session_compiles_no_code(spark, warehouse):
    """Every class Spark generates for a build stays in its code cache
    (``spark.sql.codegen.cache.maxEntries``), so a driver that builds again (the benchmark,
    a notebook) compiles nothing: with the default of 100 entries it recompiled every one."""
    from pipelines.warehouse.tables import RAW_ZNODES
    from testkit.znodes import znode_rows

    run = "twice"
    warehouse.write_table("raw/znodes", run, znode_rows(TREE, "live"), RAW_ZNODES, step="zk")
    ctx = RunContext(warehouse, run, quiet=True)
    metrics = getattr(getattr(spark._jvm.org.apache.spark.metrics.source, "CodegenMetrics$"), "MODULE$")
    compiles = metrics.METRIC_COMPILATION_TIME()
    build_core(ctx, {})
    first = compiles.getCount()
    build_core(ctx, {})
    assert compiles.getCount() == first
