"""Issue 21's invariant "no two owners at any settled moment" as the view its expectation reads:
a partition handed over cleanly has one owner at every moment; two members of one Kafka
generation assigned the same partition are two owners at that moment."""

from __future__ import annotations

import datetime as dt

from pipelines.quality.views import owners_at_moments

T = dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)


def at(minute: int) -> dt.datetime:
    return T + dt.timedelta(minutes=minute)


def test_two_owners_at_one_moment_are_two_rows(spark):
    cols = "source string, group_id string, topic string, partition int, broker_id int, owner string, " \
           "owned_from timestamp, owned_until timestamp"
    rows = [
        # g: c1 until 10:05, then c2 (handed over at the same instant): one owner at every moment
        ("zookeeper", "g", "t", 0, None, "c1-0", at(0), at(5)),
        ("zookeeper", "g", "t", 0, None, "c2-0", at(5), None),
        # k: generation 3 gives partition 1 to both m1 and m2
        ("kafka", "k", "t", 1, None, "m1", at(1), at(9)),
        ("kafka", "k", "t", 1, None, "m2", at(1), at(9)),
        ("kafka", "k", "t", 1, None, "m1", at(9), None),
    ]
    view = owners_at_moments(spark.createDataFrame(rows, cols)).collect()
    counts: dict = {}
    for r in view:
        moment = r.moment.replace(tzinfo=dt.UTC)  # the session's UTC wall time, collected naive
        counts[(r.group_id, moment)] = counts.get((r.group_id, moment), 0) + 1
    assert counts == {("g", at(0)): 1, ("g", at(5)): 1, ("k", at(1)): 2, ("k", at(9)): 1}
