"""Whether an assignment epoch of a group settled, for the groups whose coordinator writes a
target assignment epoch record and each member's current assignment (share groups:
``pipelines.spark.share_epochs``; Streams groups: ``pipelines.spark.streams_groups.epochs``).

An epoch (its target's epoch record at ``pos``; the next epoch's at ``next_pos``, null for the
last) settled when every member its target names wrote a current assignment at that epoch, in
the stable state, after ``pos`` and before ``next_pos``. An epoch that never settled and was
superseded is a transition (not a fault); the last one, still reconciling at the end of the
records, has ``is_transition`` null.

DataFrame -> DataFrame and Column helpers (no UDF).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def reached(meta: DataFrame, current: DataFrame, targeted: DataFrame, key: list[str], stable: int) -> DataFrame:
    """Per epoch (``key``: group_id, assignment_epoch, pos) of ``meta`` (with ``next_pos``):
    ``members_settled`` and ``settled_at`` (the last of their records). ``current``:
    ``group_id, member_id, current_pos, current_at, member_epoch, state`` (no tombstones);
    ``targeted``: ``key`` and ``member_id`` of each member the epoch's target names."""
    return (meta.join(current, "group_id")
            .where((F.col("member_epoch") == F.col("assignment_epoch")) & (F.col("state") == stable)
                   & (F.col("current_pos") > F.col("pos"))
                   & (F.col("next_pos").isNull() | (F.col("current_pos") < F.col("next_pos"))))
            .join(targeted.select(*key, "member_id"), [*key, "member_id"], "left_semi")
            .groupBy(*key).agg(F.countDistinct("member_id").alias("members_settled"),
                               F.max("current_at").alias("settled_at")))


def members(targeted: DataFrame, key: list[str]) -> DataFrame:
    """Per epoch (``key``) of ``targeted`` (``key``, ``member_id``): ``members`` and the sorted
    ``member_ids``."""
    return targeted.groupBy(*key).agg(F.countDistinct("member_id").alias("members"),
                                      F.array_sort(F.collect_set("member_id")).alias("member_ids"))


def settlement() -> list[Column]:
    """``members``, ``members_settled``, ``member_ids``, ``settled``, ``settled_at``,
    ``settle_ms`` and ``is_transition`` of a frame with ``members``, ``members_settled`` (0 when
    none), ``member_ids`` (null when none), ``settled_at``, ``target_at`` and ``next_pos``."""
    settled = F.col("members_settled") == F.col("members")
    return [
        F.col("members").cast("int").alias("members"), F.col("members_settled").cast("int").alias("members_settled"),
        F.coalesce("member_ids", F.array().cast("array<string>")).alias("member_ids"),
        settled.alias("settled"), F.when(settled, F.col("settled_at")).alias("settled_at"),
        F.when(settled, ((F.col("settled_at").cast("double") - F.col("target_at").cast("double")) * 1000)
               .cast("long")).alias("settle_ms"),
        F.when(settled, F.lit(False)).when(F.col("next_pos").isNotNull(), F.lit(True)).alias("is_transition"),
    ]
