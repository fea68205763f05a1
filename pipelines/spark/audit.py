"""``core/assignment_audit``: expected vs observed owner of every (source, group, topic,
partition[, broker_id]) that has an expected row or an owner.

Inputs, per source (``zookeeper`` | ``kafka``):

- ``expected``: ``core/expected_assignment`` rows (``expected_owner`` null when the group's
  assignor is not recomputed: sticky, cooperative-sticky, custom).
- ``observed``: ``source, group_id, topic, partition, broker_id, owner``.
- ``registered``: ``source, group_id, owner``: the registered consumer threads (ZooKeeper)
  or members (Kafka) of each group.
- ``subscribed``: ``source, group_id, topic``: topics some member of the group reads.
- ``known``: ``source, topic, partition, broker_id``: the partitions in topic metadata.

``status`` is the first that holds (CONTRACT): ``duplicate_owner`` (more than one distinct
owner), ``unexpected_partition`` (owned, but the partition is not in the metadata or no
member subscribes to the topic), ``unknown_owner`` (an owner that is not registered),
``unowned`` (nobody owns it: it has an expected owner, or - for assignors without one -
a member subscribes to the topic and the partition exists), ``wrong_owner`` (one registered
owner, not the expected one), ``ok``. For assignors without an expected owner a single
registered owner of a subscribed, known partition is ``ok``. Groups without live consumers
have no expected rows, so they produce rows only for owners left behind.

Two ways to the same rows. :func:`audit` is the general one: a full outer join of expected
and observed rows, which shuffles both. For range groups whose observed keys are unique (the
ZooKeeper owners: one znode per partition, the registry quarantines non-canonical names),
:func:`range_audit` looks the expected owner of every observed row up in the small range
tables (no shuffle of the big side), and :func:`unowned` adds the expected rows nobody owns;
the build runs :func:`unowned` only when the number of observed rows that matched an expected
key is below the number of expected rows. A ``range_audit`` row matched an expected key
exactly when its ``expected_owner`` is not null, so the build counts the matches in the
Parquet footers of what it wrote (null counts), with no pass over the rows.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.spark.assignors import range_owner

KEY = ["source", "group_id", "topic", "partition", "_b"]
OUT = ["source", "group_id", "topic", "partition", "broker_id", "expected_owner", "observed_owners", "status"]


def _with_b(df: DataFrame) -> DataFrame:
    """A non-null join key for the nullable broker_id (0.7 broker, null for 0.8+)."""
    return df.withColumn("_b", F.coalesce(F.col("broker_id"), F.lit(-1)))


def status(observed: str = "observed_owners", expected: str = "expected_owner") -> F.Column:
    obs = F.col(observed)
    n = F.size(obs)
    return (
        F.when(n > 1, "duplicate_owner")
        .when((n >= 1) & (~F.col("_known") | ~F.col("_subscribed")), "unexpected_partition")
        .when((n >= 1) & (F.col("_unknown") > 0), "unknown_owner")
        .when(n == 0, "unowned")
        .when(F.col(expected).isNotNull() & (F.get(obs, 0) != F.col(expected)), "wrong_owner")
        .otherwise("ok")
    )


def audit(
    expected: DataFrame, observed: DataFrame, registered: DataFrame, subscribed: DataFrame, known: DataFrame
) -> DataFrame:
    exp = _with_b(expected).select(*KEY, "broker_id", "expected_owner")
    reg = registered.select("source", "group_id", "owner").distinct().withColumn("_reg", F.lit(True))
    obs = (
        _with_b(observed)
        .join(reg, ["source", "group_id", "owner"], "left")
        .groupBy(*KEY)
        .agg(
            F.first("broker_id").alias("_obs_broker"),
            F.sort_array(F.collect_set("owner")).alias("observed_owners"),
            F.sum(F.when(F.col("_reg").isNull(), 1).otherwise(0)).alias("_unknown"),
        )
    )
    kn = _with_b(known).select("source", "topic", "partition", "_b").distinct().withColumn("_known", F.lit(True))
    sub = subscribed.select("source", "group_id", "topic").distinct().withColumn("_subscribed", F.lit(True))
    rows = (
        exp.join(obs, KEY, "full_outer")
        .join(kn, ["source", "topic", "partition", "_b"], "left")
        .join(sub, ["source", "group_id", "topic"], "left")
        .select(
            *KEY,
            F.coalesce(F.col("broker_id"), F.col("_obs_broker")).alias("broker_id"),
            "expected_owner",
            F.coalesce(F.col("observed_owners"), F.array().cast("array<string>")).alias("observed_owners"),
            F.coalesce(F.col("_unknown"), F.lit(0)).alias("_unknown"),
            F.coalesce(F.col("_known"), F.lit(False)).alias("_known"),
            F.coalesce(F.col("_subscribed"), F.lit(False)).alias("_subscribed"),
        )
    )
    return rows.select(*OUT[:-1], status().alias("status"))


def range_audit(observed: DataFrame, plan: DataFrame, sparse: DataFrame, registered: DataFrame) -> DataFrame:
    """Audit rows of ``observed`` owners (unique keys) of range groups; ``expected_owner`` is
    not null exactly when the row's key is an expected one. ``plan``, ``sparse``:
    :func:`~pipelines.spark.assignment_zk.range_inputs` of the same groups; ``registered``:
    ``group_id, owner``. All three are small and broadcast.

    One lookup per row in the common case: the plan row (group, topic) carries the sorted
    owners, the topic's shape and the group's registered owners (``_registered``). Only rows
    of a sparse topic look their rank up in ``sparse`` (the key is null for the others, which
    skips the probe). An owner that is the expected one is registered without a search."""
    members = registered.groupBy("group_id").agg(F.collect_set("owner").alias("_registered"))
    ranks = _with_b(sparse).select(F.col("topic").alias("_rt"), "partition", "_b", F.col("_j").alias("_rj"))
    part = F.col("partition")
    in_dense = F.col("_dense") & F.col("broker_id").isNull() & (part >= 0) & (part < F.col("_p"))
    rows = (
        _with_b(observed)
        .join(F.broadcast(plan.join(members, "group_id", "left")), ["group_id", "topic"], "left")
        .withColumn("_rt", F.when(~F.col("_dense"), F.col("topic")))
        .join(F.broadcast(ranks), ["_rt", "partition", "_b"], "left")
        .withColumn("_j", F.coalesce(F.when(in_dense, part), F.col("_rj")))
        .select(
            *OUT[:5],  # source .. broker_id
            "owner",
            F.array("owner").alias("observed_owners"),
            F.col("_j").isNotNull().alias("_known"),
            F.col("_owners").isNotNull().alias("_subscribed"),
            F.when(F.col("_j").isNotNull() & F.col("_owners").isNotNull(), range_owner()).alias("expected_owner"),
            "_registered",
        )
        .withColumn(
            "_unknown",
            F.when(F.col("owner") == F.col("expected_owner"), 0)
            .when(F.coalesce(F.array_contains("_registered", F.col("owner")), F.lit(False)), 0)
            .otherwise(1),
        )
    )
    return rows.select(*OUT[:-1], status().alias("status"))


def unowned(expected: DataFrame, observed: DataFrame) -> DataFrame:
    """Audit rows of the ``expected`` keys that no ``observed`` row owns."""
    return (
        _with_b(expected)
        .join(_with_b(observed).select(*KEY), KEY, "left_anti")
        .select(
            *OUT[:-2], F.array().cast("array<string>").alias("observed_owners"), F.lit("unowned").alias("status")
        )
    )
