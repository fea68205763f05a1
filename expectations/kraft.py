"""The KRaft metadata log and the registry replayed from it (``kaudit extract kraft``)."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import ERROR, WARNING, Check, Suite

SUITE = Suite(
    name="kraft",
    checks=[
        Check(
            name="partition_records_name_known_topics",
            view="metadata_partition_records",
            level=WARNING,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="topic_known", value_set=[True]),
            description=(
                "Every applied PartitionRecord / PartitionChangeRecord refers to a topic id a TopicRecord of the "
                "snapshot or the log created (the controller writes none for an unknown topic; a log that starts "
                "after a topic's creation and a snapshot taken after its deletion can miss it)."
            ),
        ),
        Check(
            name="kraft_partitions_have_a_topic",
            view="kraft_partitions",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToNotBeNull(column="topic"),
            description="Every partition of the replayed registry belongs to a live topic (its topic id has a name).",
        ),
    ],
)
