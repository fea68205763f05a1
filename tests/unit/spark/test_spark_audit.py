"""Every audit status, and the precedence between them (CONTRACT: first that holds)."""

from pyspark.testing import assertDataFrameEqual

from pipelines.spark.audit import audit

EXP = (
    "source string, group_id string, topic string, partition int, broker_id int, expected_owner string, assignor string"
)
OBS = "source string, group_id string, topic string, partition int, broker_id int, owner string"
REG = "source string, group_id string, owner string"
SUB = "source string, group_id string, topic string"
KNOWN = "source string, topic string, partition int, broker_id int"
Z, K = "zookeeper", "kafka"


def test_each_status_and_precedence(spark):
    expected = [
        (Z, "g", "t", 0, None, "c-0", "range"),  # ok
        (Z, "g", "t", 1, None, "c-0", "range"),  # wrong_owner (d-0 registered)
        (Z, "g", "t", 2, None, "c-0", "range"),  # unowned
        (Z, "g", "t", 3, None, "c-0", "range"),  # unknown_owner (ghost-0)
        (Z, "g", "t", 4, None, "c-0", "range"),  # duplicate_owner beats unknown_owner
        (Z, "g7", "old", 0, 2, "c-0", "range"),  # 0.7: same partition id, other broker
        (K, "k", "t", 0, None, None, "sticky: not recomputed"),  # structural: unowned
        (K, "k", "t", 1, None, None, "sticky: not recomputed"),  # structural: ok
    ]
    observed = [
        (Z, "g", "t", 0, None, "c-0"),
        (Z, "g", "t", 1, None, "d-0"),
        (Z, "g", "t", 3, None, "ghost-0"),
        (K, "k", "t", 4, None, "m1"),  # duplicate with an unknown owner: duplicate wins
        (Z, "g", "t", 4, None, "ghost-0"),
        (Z, "g", "t", 4, None, "c-0"),
        (Z, "g", "t", 9, None, "c-0"),  # unexpected: partition not in metadata
        (Z, "g", "u", 0, None, "ghost-0"),  # unexpected (nobody subscribes u) beats unknown owner
        (Z, "g7", "old", 0, 1, "c-0"),  # 0.7: broker 1 has no partition 0 in the metadata
        (Z, "g7", "old", 0, 2, "c-0"),
        (K, "k", "t", 1, None, "m1"),
        (K, "k", "t", 4, None, "m2"),
        (K, "gone", "t", 0, None, "m9"),  # owner left behind by a group without members
    ]
    registered = [(Z, "g", "c-0"), (Z, "g", "d-0"), (Z, "g7", "c-0"), (K, "k", "m1"), (K, "k", "m2")]
    subscribed = [(Z, "g", "t"), (Z, "g7", "old"), (K, "k", "t")]
    known = [(Z, "t", p, None) for p in range(5)] + [(Z, "u", 0, None), (Z, "old", 0, 2)]
    known += [(K, "t", p, None) for p in range(5)]
    got = audit(
        spark.createDataFrame(expected, EXP),
        spark.createDataFrame(observed, OBS),
        spark.createDataFrame(registered, REG),
        spark.createDataFrame(subscribed, SUB),
        spark.createDataFrame(known, KNOWN),
    )
    want = [
        (Z, "g", "t", 0, None, "c-0", ["c-0"], "ok"),
        (Z, "g", "t", 1, None, "c-0", ["d-0"], "wrong_owner"),
        (Z, "g", "t", 2, None, "c-0", [], "unowned"),
        (Z, "g", "t", 3, None, "c-0", ["ghost-0"], "unknown_owner"),
        (Z, "g", "t", 4, None, "c-0", ["c-0", "ghost-0"], "duplicate_owner"),
        (Z, "g", "t", 9, None, None, ["c-0"], "unexpected_partition"),
        (Z, "g", "u", 0, None, None, ["ghost-0"], "unexpected_partition"),
        # broker 1's partition 0 of a 0.7 topic is not in the metadata (only broker 2's is)
        (Z, "g7", "old", 0, 1, None, ["c-0"], "unexpected_partition"),
        (Z, "g7", "old", 0, 2, "c-0", ["c-0"], "ok"),
        (K, "k", "t", 0, None, None, [], "unowned"),
        (K, "k", "t", 1, None, None, ["m1"], "ok"),
        (K, "k", "t", 4, None, None, ["m1", "m2"], "duplicate_owner"),
        (K, "gone", "t", 0, None, None, ["m9"], "unexpected_partition"),
    ]
    assertDataFrameEqual(got, want)


def test_range_lookup_audit_equals_the_full_join(spark):
    """range_audit + unowned (the build's path for ZooKeeper range groups) give exactly the
    rows of the general audit on random groups with every kind of fault, both layouts, dense
    topics (partitions 0..P-1) and a sparse one (partitions 0, 2, 5: ranked by lookup)."""
    import random

    from pyspark.sql import functions as F

    from pipelines.spark import assignment_zk as zk
    from pipelines.spark.audit import range_audit, unowned

    rnd = random.Random(5)
    topics = {f"t{i}": rnd.randint(1, 9) for i in range(4)}
    parts = [(t, p, None) for t, n in topics.items() for p in range(n)]
    parts += [("old", p, b) for b in (1, 2) for p in range(rnd.randint(1, 4))]
    parts += [("gaps", p, None) for p in (0, 2, 5)]
    regs, owners = [], []
    for g in range(12):
        group = f"g{g}"
        consumers = [f"{group}_c{c}" for c in range(rnd.randint(1, 4))]
        for c in consumers:
            for t in rnd.sample([*topics, "old", "gaps", "ghost_topic"], rnd.randint(1, 3)):
                regs.append((group, c, t, rnd.randint(1, 3)))
        threads = [f"{c}-{n}" for c in consumers for n in range(3)] + ["stranger-0"]
        extra = [("t0", 50, None), ("t1", -1, None), ("t1", 0, 3), ("gaps", 1, None), ("nobody_reads", 0, None)]
        for t, p, b in parts + extra:
            if rnd.random() < 0.8:
                owners.append((Z, group, t, p, b, rnd.choice(threads)))
    registrations = spark.createDataFrame(regs, "group_id string, consumer_id string, topic string, streams int")
    topic_parts = spark.createDataFrame(parts, "topic string, partition int, broker_id int")
    observed = spark.createDataFrame(owners, OBS)

    threads = zk.consumer_threads(registrations)
    src = F.lit(Z).alias("source")
    full = audit(
        zk.expected_assignment(registrations, topic_parts, {}),
        observed,
        threads.select(src, "group_id", "owner"),
        threads.select(src, "group_id", "topic"),
        topic_parts.select(src, "topic", "partition", "broker_id"),
    )
    plan, ranks = zk.range_inputs(threads, topic_parts)
    looked_up = range_audit(observed, plan, ranks, threads)
    fast = looked_up.unionByName(unowned(zk.expected_range(plan, ranks), observed))
    assertDataFrameEqual(fast, full)
    statuses = {r.status for r in full.select("status").distinct().collect()}
    assert statuses == {"ok", "wrong_owner", "unknown_owner", "unowned", "unexpected_partition"}
    matched = looked_up.where(F.col("expected_owner").isNotNull()).count()
    assert matched < zk.expected_range(plan, ranks).count()  # some expected keys are unowned
