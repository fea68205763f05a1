"""Who owns what: one owner per partition, owners that are registered consumers, and the
audit's verdict ``ok`` everywhere (CONTRACT: core/assignment_audit statuses)."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import ERROR, Check, Suite

PARTITION_KEY = ["group_id", "topic", "partition", "broker_key"]

SUITE = Suite(
    name="assignment",
    checks=[
        Check(
            name="owners_unique_per_partition",
            view="observed_owners",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", *PARTITION_KEY]),
            description="At most one distinct owner per (source, group, topic, partition[, broker]): "
            "every owner of a partition with duplicate owners is listed.",
        ),
        Check(
            name="one_owner_at_every_moment",
            view="ownership_moments",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", *PARTITION_KEY, "moment"]),
            description="At every moment of the history (marts/ownership_history), at most one owner "
            "per (source, group, topic, partition[, broker]): no two owners at any settled moment.",
        ),
        Check(
            name="zk_owner_znodes_unique",
            view="partition_owners",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(column_list=PARTITION_KEY),
            description="ZooKeeper owner registry: one owner znode value per (group, topic, partition[, broker]).",
        ),
        Check(
            name="owners_are_registered",
            view="observed_owners",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="registered", value_set=[True]),
            description="Every owner is a registered consumer thread of its group (ZooKeeper) or a member "
            "of the group's current generation (Kafka).",
        ),
        Check(
            name="assignment_status_ok",
            view="assignment_audit",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="status", value_set=["ok"]),
            description="Every audited partition is owned by exactly its expected owner (status ok).",
        ),
    ],
)
