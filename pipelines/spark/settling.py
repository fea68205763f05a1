"""Rebalances made of states, and the stuck ones (:mod:`pipelines.settle`), for both eras'
``core/rebalance_states`` rows. DataFrame -> DataFrame, no UDF.

A rebalance is a group's run of unsettled states (transitions) and the state that settled it:
it begins with the first state after a settled one (or the group's first state, or the first
after the group was deleted) and ends when a state settles. It is stuck when it settled more
than the stuck limit after it began, or has not settled by then: the flag is on the run's last
state (the one that settled it, or the last one seen)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.settle import SettleRule


def millis(at: Column) -> Column:
    return F.unix_millis(at)


def rebalance_runs(states: DataFrame, group: list[str], order: list[str], rule: SettleRule,
                   until: Column, fresh: Column) -> DataFrame:
    """``states`` (``settled``, ``started_at``, ``settled_at``) with ``rebalance_started_at`` (the
    start of the rebalance each state belongs to), ``stuck``, ``settle_window_ms`` and
    ``stuck_limit_ms``. ``until``: when an unsettled state ended (the next state's start, the end
    of the history for the last; null: unknown); ``fresh``: the state begins a rebalance whatever
    came before (the group's first state, the first after a deletion)."""
    w = Window.partitionBy(*group).orderBy(*order)
    breaks = (fresh | F.coalesce(F.lag("settled").over(w), F.lit(True))).cast("int")
    so_far = w.rowsBetween(Window.unboundedPreceding, 0)
    marked = states.withColumns({"_until": until, "_run": F.sum(breaks).over(so_far)})
    run = Window.partitionBy(*group, "_run")
    began = F.min("started_at").over(run)
    last_of_run = F.lead("_run").over(w).isNull() | (F.lead("_run").over(w) != F.col("_run"))
    ended = F.when(F.col("settled"), F.col("settled_at")).otherwise(F.col("_until"))
    late = (millis(ended) - millis(F.col("rebalance_started_at"))) > rule.stuck_limit_ms
    return (
        marked.withColumn("rebalance_started_at", began)
        .withColumn("stuck", F.coalesce(last_of_run & late, F.lit(False)))
        .withColumns({"settle_window_ms": F.lit(rule.window_ms).cast("bigint"),
                      "stuck_limit_ms": F.lit(rule.stuck_limit_ms).cast("bigint")})
        .drop("_until", "_run")
    )
