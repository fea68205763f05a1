"""Every audit status, and the precedence between them (CONTRACT: first that holds)."""

from pyspark.testing import assertDataFrameEqual

from pipelines.spark.audit import audit

EXP = "source string, group_id string, topic string, partition int, broker_id int, expected_owner string, assignor string"
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
