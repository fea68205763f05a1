"""The simple assignor's balance rule (pipelines.spark.share_groups.simple_assignor) on settled
homogeneous share groups: a partition shared by more than ceil(M/P) members or a member holding
another count than the builder's desired floor/ceil(D*P/M) is a finding; a group still
reconciling (a transition) or with mixed subscriptions is not judged."""

from __future__ import annotations

from pipelines.spark import share_groups as S
from pipelines.spark.schemas import table_schema


def _rows(group, holdings, epochs=(5, 5, 5), topics=("orders",)):
    member_epoch, assignment_epoch, group_epoch = epochs
    out = []
    for member, parts in holdings.items():
        subs = list(topics) if not isinstance(parts, tuple) else list(parts[1])
        parts = parts[0] if isinstance(parts, tuple) else parts
        base = dict(group_id=group, member_id=member, client_id="c", client_host="h", subscribed_topics=subs,
                    member_epoch=member_epoch, group_epoch=group_epoch, assignment_epoch=assignment_epoch)
        out += [{**base, "topic_id": "T", "topic": "orders", "partition": p} for p in parts] or [
            {**base, "topic_id": None, "topic": None, "partition": None}]
    return out


def test_balance_of_settled_homogeneous_groups(spark):
    rows = (
        # 2 members, 4 partitions: D = 1, each member 2
        _rows("even", {"a": [0, 1, 2], "b": [3]})
        # 3 members, 2 partitions: D = 2, each member 1 or 2 (4 shares over 3 members): balanced
        + _rows("over", {"a": [0, 1], "b": [0], "c": [1]}, topics=("pair",))
        # 2 members, 2 partitions: D = 1; partition 0 shared by both, b holds 2
        + _rows("crowd", {"a": [0], "b": [0, 1]}, topics=("pair",))
        # the same imbalance while a member is still below the assignment epoch: a transition
        + _rows("moving", {"a": [0, 1, 2], "b": [3]}, epochs=(4, 5, 5))
        # mixed subscriptions: the builder is the heterogeneous one, not judged
        + _rows("mixed", {"a": ([0, 1, 2], ("orders",)), "b": ([3], ("orders", "pair"))})
    )
    assigned = spark.createDataFrame(rows, table_schema("core/share_group_assignments"))
    parts = spark.createDataFrame([("orders", p) for p in range(4)] + [("pair", p) for p in range(2)],
                                  "topic string, partition int")
    found = sorted(((r.group_id, r.member_id, r.partition, r.detail)
                    for r in S.simple_assignor(assigned, parts).collect()), key=str)
    assert found == sorted([
        ("crowd", None, 0, "held by 2 members; the simple assignor shares a partition among at most 1"),
        ("crowd", "b", None, "holds 2 partitions; the simple assignor gives each of 2 members 1 of 2"),
        ("even", "a", None, "holds 3 partitions; the simple assignor gives each of 2 members 2 of 4"),
        ("even", "b", None, "holds 1 partitions; the simple assignor gives each of 2 members 2 of 4"),
    ], key=str)
