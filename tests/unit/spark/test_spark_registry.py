"""raw/znodes -> typed registry tables, both ZooKeeper layouts, malformed values quarantined."""

import json

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.spark import registry
from pipelines.spark.io import conform

TREE = {
    # 0.8+ brokers; a SASL-only one (host null, port -1) takes host/port from its endpoint
    "/brokers/ids/1": json.dumps({"host": "h1", "port": 9092, "endpoints": ["PLAINTEXT://h1:9092"], "version": 4}),
    "/brokers/ids/3": json.dumps({"host": None, "port": -1, "endpoints": ["SASL_SSL://h3:9094"]}),
    # 0.7 brokers: creator:host:port and host:port
    "/brokers/ids/2": "10.0.0.2-1323469284356:h2:9093",
    "/brokers/ids/4": "h4:9095",
    "/brokers/ids/x": "h:1",  # bad id
    "/brokers/ids/5": "{not json",  # bad JSON
    # 0.8+ topic with a state for partition 0
    "/brokers/topics/t": json.dumps({"version": 1, "partitions": {"0": [1, 2], "1": [2, 1]}}),
    "/brokers/topics/t/partitions": "",
    "/brokers/topics/t/partitions/0": "",
    "/brokers/topics/t/partitions/0/state": json.dumps(
        {"controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 3, "isr": [1, 2]}
    ),
    "/brokers/topics/bad": "{nope",
    "/brokers/topics/shape": json.dumps({"version": 1, "partitions": {"0": "x"}}),
    # 0.7 topic: /brokers/topics/<t>/<broker> -> nPartitions
    "/brokers/topics/old": None,
    "/brokers/topics/old/1": "2",
    "/brokers/topics/old/2": "1",
    "/brokers/topics/old/9": "lots",
    # consumers, both layouts
    "/consumers/g/ids/g_c1": json.dumps(
        {"version": 1, "subscription": {"t": 2}, "pattern": "static", "timestamp": "1"}
    ),
    "/consumers/g/ids/g_c2": json.dumps({"version": 1, "subscription": {"t": -1}, "pattern": "static"}),
    "/consumers/g/ids/g_w": json.dumps({"version": 1, "subscription": {"t.*": 1}, "pattern": "white_list"}),
    "/consumers/g/ids/g_bad": "garbage",
    "/consumers/g/ids/g_str": json.dumps({"version": 1, "subscription": {"t": "2"}, "pattern": "static"}),
    "/consumers/g/ids/g_cut": '{"version": 1, "subscription": {"t": 2',
    "/consumers/s/ids/s_c": '{"subscription-events": 3}',  # 0.7, a topic named like the 0.8+ key
    "/consumers/o/ids/o_c": '{ "old" : 1 }',
    "/consumers/g/owners/t/0": "g_c1-0",
    "/consumers/g/owners/t/zz": "g_c1-1",
    "/consumers/g/owners/t/01": "g_c1-1",  # not canonical: a second znode for partition 1
    "/consumers/o/owners/old/2-0": "o_c-0",
    "/consumers/g/offsets/t/0": "17",
    "/consumers/g/offsets/t/1": "x17",
    "/consumers/o/offsets/old/1-1": "5",
    "/cluster/id": json.dumps({"version": "1", "id": "AbC_-9"}),
    "/controller": json.dumps({"version": 1, "brokerid": 2, "timestamp": "1"}),
    "/admin/delete_topics/b": "",
    "/admin/delete_topics/a": "",
}


def _parsed(znodes, table, tree=TREE, source="live"):
    z = registry.select_source(znodes(tree, source), source).transform(registry.with_path_parts)
    return registry.PARSERS[table](z)


def test_registry_tables_of_both_layouts(spark, znodes):
    def good(table):
        return conform(registry.good(_parsed(znodes, table)), table)

    assertDataFrameEqual(
        good("core/brokers"),
        [  # rack, fenced: KRaft only, null here
            (1, "h1", 9092, ["PLAINTEXT://h1:9092"], None, None),
            (2, "h2", 9093, [], None, None),
            (3, "h3", 9094, ["SASL_SSL://h3:9094"], None, None),
            (4, "h4", 9095, [], None, None),
        ],
    )
    assertDataFrameEqual(
        good("core/topic_partitions"),
        [  # topic_id, directories, eligible_leader_replicas: KRaft only, null here
            ("t", 0, None, [1, 2], 1, 3, [1, 2], None, None, None),
            ("t", 1, None, [2, 1], None, None, None, None, None, None),
            ("old", 0, 1, None, None, None, None, None, None, None),
            ("old", 1, 1, None, None, None, None, None, None, None),
            ("old", 0, 2, None, None, None, None, None, None, None),
        ],
    )
    assertDataFrameEqual(
        good("core/consumer_registrations"),
        [("g", "g_c1", "t", 2), ("g", "g_w", "t", 1), ("o", "o_c", "old", 1), ("s", "s_c", "subscription-events", 3)],
    )
    assertDataFrameEqual(
        good("core/partition_owners"), [("g", "t", 0, None, "g_c1-0"), ("o", "old", 0, 2, "o_c-0")]
    )
    offsets = good("core/zk_offsets").select("group_id", "topic", "partition", "broker_id", "committed_offset")
    assertDataFrameEqual(offsets, [("g", "t", 0, None, 17), ("o", "old", 1, 1, 5)])
    assertDataFrameEqual(good("core/cluster"), [("AbC_-9", 2, ["a", "b"])])


def test_malformed_values_become_quarantine_rows(spark, znodes):
    bad = None
    for table in registry.PARSERS:
        q = registry.quarantine(_parsed(znodes, table))
        bad = q if bad is None else bad.unionByName(q)
    got = {(r.location, r.reason) for r in bad.collect()}
    assert got == {
        ("/brokers/ids/x", "non-numeric broker id"),
        ("/brokers/ids/5", "broker registration is not valid JSON"),
        ("/brokers/topics/bad", "topic metadata is not valid JSON"),
        ("/brokers/topics/shape", "topic metadata without a partitions map of replica lists"),
        ("/brokers/topics/old/9", "0.7 partition count is not a number"),
        ("/consumers/g/ids/g_c2", "invalid stream count for topic 't'"),
        ("/consumers/g/ids/g_bad", "consumer registration is not valid JSON"),
        ("/consumers/g/ids/g_str", "consumer registration without a {topic: streams} subscription"),
        ("/consumers/g/ids/g_cut", "consumer registration is not valid JSON"),
        ("/consumers/g/owners/t/zz", "owner znode name is not a canonical partition id or broker-partition"),
        ("/consumers/g/owners/t/01", "owner znode name is not a canonical partition id or broker-partition"),
        ("/consumers/g/offsets/t/1", "non-numeric offset"),
    }
    assert all(r.source == "registry" and r.raw is not None for r in bad.collect())


def _wildcard(regex, pattern="white_list", streams=1):
    return json.dumps({"version": 1, "subscription": {regex: streams}, "pattern": pattern, "timestamp": "1"})


# wildcard registrations (Kafka's WildcardTopicCount) against the topics under /brokers/topics
WILDCARD_TREE = {
    **{f"/brokers/topics/{t}": json.dumps({"version": 1, "partitions": {"0": [1]}})
       for t in ("clicks", "clicks-eu", "orders", "__consumer_offsets")},
    "/consumers/m/ids/m_w": _wildcard("clicks.*", streams=2),  # clicks, clicks-eu
    "/consumers/m/ids/m_b": _wildcard("clicks.*", "black_list"),  # orders; never an internal topic
    "/consumers/m/ids/m_list": _wildcard(" 'orders, clicks' "),  # TopicFilter: orders|clicks
    "/consumers/m/ids/m_all": _wildcard(".*"),
    "/consumers/m/ids/m_part": _wildcard("click"),  # the whole name must match: nothing
    "/consumers/m/ids/m_bad": _wildcard("clicks["),
    "/consumers/m/ids/m_neg": _wildcard("clicks.*", streams=-1),
    "/consumers/m/ids/m_two": json.dumps({"version": 1, "subscription": {"a": 1, "b": 1}, "pattern": "white_list"}),
    "/consumers/m/ids/m_odd": json.dumps({"version": 1, "subscription": {"a": 1}, "pattern": "regex"}),
}


def test_wildcard_registrations_read_the_topics_their_filter_lets_through(spark, znodes):
    parsed = _parsed(znodes, "core/consumer_registrations", WILDCARD_TREE)
    assertDataFrameEqual(
        conform(registry.good(parsed), "core/consumer_registrations"),
        [
            ("m", "m_w", "clicks", 2), ("m", "m_w", "clicks-eu", 2),
            ("m", "m_b", "orders", 1),
            ("m", "m_list", "orders", 1), ("m", "m_list", "clicks", 1),
            ("m", "m_all", "clicks", 1), ("m", "m_all", "clicks-eu", 1), ("m", "m_all", "orders", 1),
        ],
    )
    assert {(r.location, r.reason) for r in registry.quarantine(parsed).collect()} == {
        ("/consumers/m/ids/m_bad", "wildcard topic filter is not a valid regex"),
        ("/consumers/m/ids/m_neg", "invalid stream count for the wildcard topic filter"),
        ("/consumers/m/ids/m_two", "wildcard subscription without exactly one topic filter"),
        ("/consumers/m/ids/m_odd", "unknown subscription pattern 'regex'"),
    }


def test_live_rows_win_over_snapshot_rows_and_snapshot_alone_is_used(warehouse):
    from pipelines.spark.io import row_group_bounds
    from pipelines.warehouse.tables import RAW_ZNODES
    from testkit.znodes import znode_rows

    def sources(run_id):
        return registry.pick_source(row_group_bounds(warehouse, "raw/znodes", run_id, "source"))

    snap = znode_rows({"/consumers/g/owners/t/0": "snap-0", "/consumers/g/owners/t/1": "snap-0"}, "snapshot")
    live = znode_rows({"/consumers/g/owners/t/0": "live-0"}, "live")
    for run_id, parts in (("both", {"zk": live, "zk-snapshot": snap}), ("snap", {"zk-snapshot": snap})):
        for step, table in parts.items():
            with warehouse.transaction(run_id, step=step) as tx:
                tx.write("raw/znodes", table, RAW_ZNODES)
    assert row_group_bounds(warehouse, "raw/znodes", "both", "source") == {"live", "snapshot"}
    assert sources("both") == "live"
    assert sources("snap") == "snapshot"
    assert row_group_bounds(warehouse, "raw/znodes", "none", "source") == set()


# (znode name, partition, broker_id, canonical): anything but the decimal Kafka writes is not
# a partition name (a second znode for the same key, or garbage)
PARTITION_NAMES = [
    ("0", 0, None, True),
    ("17", 17, None, True),
    ("2147483647", 2147483647, None, True),
    ("2-0", 0, 2, True),
    ("10-11", 11, 10, True),
    ("01", 1, None, False),
    ("1-01", 1, 1, False),
    ("01-1", 1, 1, False),
    ("-1", 1, None, False),
    ("+1", 1, None, False),
    (" 1", 1, None, False),
    ("1 ", 1, None, False),
    ("1--2", 2, 1, False),
    ("1-2-3", 3, 1, False),
    ("1-", None, 1, False),
    ("2147483648", None, None, False),
    ("1.0", None, None, False),
    ("1e3", None, None, False),
    ("zz", None, None, False),
    ("\u0663", None, None, False),
]


def test_partition_child_names_are_canonical_decimals(spark):
    names = spark.createDataFrame([(n,) for n, *_ in PARTITION_NAMES], "name string")
    part, broker, ok = registry._partition_name(F.col("name"))
    got = {r.name: r.ok for r in names.select("name", ok.alias("ok")).collect()}
    assert got == {n: canonical for n, _, _, canonical in PARTITION_NAMES}
    good = names.select("name", part.alias("p"), broker.alias("b")).where(ok).collect()
    assert {(r.name, r.p, r.b) for r in good} == {(n, p, b) for n, p, b, c in PARTITION_NAMES if c}


def test_partition_child_paths(spark):
    paths = {
        "/consumers/g/owners/t/0": "owners",
        "/consumers/g.x-1/offsets/my.topic/2-0": "offsets",
        "/consumers/g/owners/t": None,
        "/consumers/g/owners/t/0/extra": None,
        "/consumers/g/owners//0": None,
        "/consumers//owners/t/0": None,
        "/consumers/g/owners/t/": None,
        "/consumers/g/ids/t/0": None,
        "/consumers/g/ownersx/t/0": None,
        "/other/g/owners/t/0": None,
        "/consumers": None,
    }
    df = spark.createDataFrame([(p,) for p in paths], "path string")
    kinds = [F.when(registry.is_partition_child(k), k) for k in ("owners", "offsets")]
    got = {r.path: r.kind for r in df.select("path", F.coalesce(*kinds).alias("kind")).collect()}
    assert got == paths


def test_small_remainder_keeps_what_the_small_parsers_read(spark, znodes):
    """Groups named like the bulk kinds: their registrations stay in the small remainder,
    their owners do not, and the byte search over-counts the bulk rather than misses any."""
    tree = {
        "/consumers/owners/ids/c1": json.dumps({"version": 1, "subscription": {"t": 1}, "pattern": "static"}),
        "/consumers/offsets/ids/c2": json.dumps({"version": 1, "subscription": {"t": 1}, "pattern": "static"}),
        "/consumers/owners/owners/t/0": "c1-0",
        "/consumers/g/offsets/t/0": "5",
        "/brokers/ids/1": json.dumps({"host": "h", "port": 1}),
    }
    z = registry.select_source(znodes(tree, "live"), "live")
    small = {r.path for r in z.where(registry.is_small()).collect()}
    assert small == {"/consumers/owners/ids/c1", "/consumers/offsets/ids/c2", "/brokers/ids/1"}
    regs = registry.good(registry.parse_registrations(z.where(registry.is_small()).transform(registry.with_path_parts)))
    assert {(r.group_id, r.consumer_id) for r in regs.collect()} == {("owners", "c1"), ("offsets", "c2")}
    candidates = z.select(
        *[F.sum(registry.may_be_partition_child(k).cast("int")).alias(k) for k in ("owners", "offsets")]
    )
    assert candidates.first().asDict() == {"owners": 2, "offsets": 2}
