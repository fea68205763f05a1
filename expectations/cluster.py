"""The cluster's own registry: brokers, leaders, cluster id, topics being deleted."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import END, ERROR, WARNING, Check, Suite

SUITE = Suite(
    name="cluster",
    checks=[
        Check(
            name="leader_in_isr",
            view="topic_partitions",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="leader_in_isr", value_set=[True]),
            description="Every partition's leader is in its in-sync replica set (0.8+ layout).",
        ),
        Check(
            name="leader_is_registered_broker",
            view="topic_partitions",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="leader_registered", value_set=[True]),
            description="Every partition's leader is a broker registered under /brokers/ids.",
        ),
        Check(
            name="broker_ids_unique",
            view="brokers",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeUnique(column="broker_id"),
            description="Broker ids are unique.",
        ),
        Check(
            name="cluster_id_format",
            view="cluster",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToMatchRegex(column="cluster_id", regex=r"^[a-zA-Z0-9_-]{1,22}" + END),
            description="The cluster id (/cluster/id) matches [a-zA-Z0-9_-]{1,22}.",
        ),
        Check(
            name="no_pending_topic_deletions",
            view="pending_topic_deletions",
            level=WARNING,
            expectation=gxe.ExpectTableRowCountToEqual(value=0),
            description="No topic is pending deletion (/admin/delete_topics).",
        ),
    ],
)
