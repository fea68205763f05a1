"""The share group records of ``__consumer_offsets`` (``raw/group_coordinator_records``, key
types 10-15, their fields as JSON) parsed by type, for the share groups' audit
(:mod:`pipelines.spark.share_groups`) and every epoch of theirs (:mod:`pipelines.spark.share_epochs`)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_TOPIC_INFO = "array<struct<topicId:string,topicName:string,partitions:array<int>>>"
_TOPIC_PARTS = "array<struct<topicId:string,partitions:array<int>>>"
JSON_SCHEMAS = {
    "ShareGroupMemberMetadata": "struct<clientId:string,clientHost:string,rackId:string,"
                                "subscribedTopicNames:array<string>>",
    "ShareGroupMetadata": "struct<epoch:int>",
    "ShareGroupTargetAssignmentMetadata": "struct<assignmentEpoch:int>",
    "ShareGroupTargetAssignmentMember": f"struct<topicPartitions:{_TOPIC_PARTS}>",
    "ShareGroupCurrentMemberAssignment": f"struct<memberEpoch:int,previousMemberEpoch:int,state:int,"
                                         f"assignedPartitions:{_TOPIC_PARTS}>",
    "ShareGroupStatePartitionMetadata": f"struct<initializingTopics:{_TOPIC_INFO},"
                                        f"initializedTopics:{_TOPIC_INFO},deletingTopics:{_TOPIC_INFO}>",
}


def share_records(coordinator_records: DataFrame, record_type: str) -> DataFrame:
    """The share group records of one type, ``v`` their fields parsed from JSON."""
    return (coordinator_records.where(F.col("record_type") == record_type)
            .withColumn("v", F.from_json("fields", JSON_SCHEMAS[record_type])))
