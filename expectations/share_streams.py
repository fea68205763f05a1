"""Share groups (KIP-932) and Streams groups (KIP-1071): one state per share-partition, lag
never negative and the start never past the log end, every active Streams task owned by one
member, the findings named from their sets, and every assignment epoch of both kinds settled,
a transition or reconciling, with no faulty target (CONTRACT: core/share_*, core/streams_*,
marts/group_epochs)."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import ERROR, WARNING, Check, Suite
from pipelines.warehouse.tables import SHARE_GROUP_FINDINGS, STREAMS_GROUP_FINDINGS

SHARE_KEY = ["group_id", "topic_id", "partition"]

SUITE = Suite(
    name="share_streams",
    checks=[
        Check(
            name="share_partition_state_unique",
            view="share_partition_state",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(column_list=SHARE_KEY),
            description="One replayed state per share-partition (group, topic id, partition).",
        ),
        Check(
            name="share_lag_non_negative",
            view="share_group_lag",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="lag", min_value=0),
            description="A share group's lag (records from the start offset to the log end not yet "
            "acknowledged or archived, marts/share_group_lag) is never negative.",
        ),
        Check(
            name="share_start_within_log_end",
            view="share_group_lag",
            level=ERROR,
            expectation=gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                column_A="log_end_offset", column_B="start_offset", or_equal=True,
                ignore_row_if="either_value_is_missing"),
            description="A share-partition's start offset is at or below its partition's log end.",
        ),
        Check(
            name="share_state_known",
            view="share_partition_state",
            level=WARNING,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="state_known", value_set=[True]),
            description="Every share-partition's state is replayed from a ShareSnapshot (unknown: pruned "
            "or not decoded; its lag is not known).",
        ),
        Check(
            name="share_no_archived_unacknowledged",
            view="share_partition_state",
            level=WARNING,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="archived", max_value=0),
            description="No record was archived without being acknowledged (marts/share_group_archived_records "
            "lists those the application never processed).",
        ),
        Check(
            name="share_findings_named",
            view="share_group_findings",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="finding", value_set=list(SHARE_GROUP_FINDINGS)),
            description="Every share-group finding is one of the audit's named findings.",
        ),
        Check(
            name="streams_tasks_unique",
            view="streams_group_tasks",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["group_id", "member_id", "assignment", "task_kind", "subtopology_id", "partition",
                             "pending_revocation"]),
            description="A task appears once per member, assignment (current, target) and kind.",
        ),
        Check(
            name="streams_task_kinds_known",
            view="streams_group_tasks",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="task_kind", value_set=["active", "standby", "warmup"]),
            description="Every Streams task is active, standby or warm-up.",
        ),
        Check(
            name="streams_active_task_one_owner",
            view="streams_active_tasks",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(column_list=["group_id", "subtopology_id", "partition"]),
            description="Every active task of a Streams group is held (current assignment, not pending "
            "revocation) by at most one member.",
        ),
        Check(
            name="streams_findings_named",
            view="streams_group_findings",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="finding", value_set=list(STREAMS_GROUP_FINDINGS)),
            description="Every Streams-group finding is one of the audit's named findings.",
        ),
        Check(
            name="group_epochs_unique",
            view="group_epochs",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(
                column_list=["group_type", "group_id", "offsets_partition", "log_offset"]),
            description="One row per target assignment epoch record of a share or Streams group "
            "(marts/group_epochs).",
        ),
        Check(
            name="group_epochs_settled_within_members",
            view="group_epochs",
            level=ERROR,
            expectation=gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                column_A="members", column_B="members_settled", or_equal=True),
            description="An epoch's members that reached it are among the members its target names.",
        ),
        Check(
            name="group_epochs_settle_time_non_negative",
            view="group_epochs",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="settle_ms", min_value=0),
            description="An epoch settles after its target was written (settle_ms, null when it did not settle).",
        ),
        Check(
            name="group_epochs_outcome_known",
            view="group_epochs",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(
                column="outcome", value_set=["settled", "transition", "reconciling"]),
            description="Every epoch settled, was a transition (superseded before it settled) or is the "
            "last one, still reconciling.",
        ),
        Check(
            name="group_epochs_no_faulty_target",
            view="group_epochs",
            level=WARNING,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="is_fault", value_set=[False]),
            description="No epoch that is no transition has a wrong target: a share group's partition "
            "targeted to nobody or shared beyond the simple assignor's bound, a Streams active task "
            "targeted to two members or beside its standby (transitions are never faults).",
        ),
        Check(
            name="streams_lag_non_negative",
            view="streams_group_lag",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="lag", min_value=0),
            description="A Streams task's lag (log end - the application's committed offset, "
            "marts/streams_group_lag) is never negative.",
        ),
    ],
)
