"""Chains of Spark actions side by side: results, errors, and cancellation on failure."""

from __future__ import annotations

import time

import pytest

from pipelines.spark.concurrent import Concurrent


def test_chains_run_side_by_side_in_their_pools(spark):
    def count(n: int) -> tuple[int, str | None]:
        return spark.range(n).count(), spark.sparkContext.getLocalProperty("spark.scheduler.pool")

    with Concurrent(spark) as side:
        a = side.submit("a", count, 10)
        b = side.submit("b", count, 20)
        here = spark.range(5).count()
    assert (a.result(), b.result(), here) == ((10, "a"), (20, "b"), 5)
    assert spark.sparkContext.getConf().get("spark.scheduler.mode") == "FAIR"
    assert spark.sparkContext.getLocalProperty("spark.scheduler.pool") is None


def _fail(spark) -> None:
    spark.sql("select assert_true(false, 'planted')").collect()


def _endless(spark):
    """A job that would run for hours, as one task: the other core stays free for the rest."""
    return spark.range(0, 10**13, 1, 1).selectExpr("sum(id % 7)").collect


def test_an_error_in_a_chain_is_raised_by_result_and_by_the_block(spark):
    with Concurrent(spark) as side:
        chain = side.submit("x", _fail, spark)
        with pytest.raises(Exception, match="planted"):
            chain.result()

    with pytest.raises(Exception, match="planted"), Concurrent(spark) as side:
        side.submit("x", _fail, spark)


def test_a_failing_block_cancels_the_running_chains(spark):
    """A job that would run for hours is cancelled when the block raises; the block exits
    within seconds with its own error, and the session stays usable."""
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="main failed"), Concurrent(spark) as side:
        chain = side.submit("x", _endless(spark))
        time.sleep(1.0)
        raise RuntimeError("main failed")
    assert time.monotonic() - started < 60
    assert not chain.alive()
    with pytest.raises(Exception, match="cancel"):
        chain.result()
    assert spark.range(3).count() == 3


def test_a_failing_chain_cancels_the_others(spark):
    """Nobody asked for the failing chain's result: leaving the block cancels the endless one
    and raises the failure."""
    started = time.monotonic()
    with pytest.raises(Exception, match="planted"), Concurrent(spark) as side:
        endless = side.submit("x", _endless(spark))
        side.submit("y", _fail, spark)
    assert time.monotonic() - started < 60
    assert not endless.alive()
