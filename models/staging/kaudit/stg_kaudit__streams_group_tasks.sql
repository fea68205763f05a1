-- Every task a live Streams-group member holds (assignment current, with the tasks pending
-- revocation it still holds) or is targeted (assignment target), core/streams_group_tasks.
select
    group_id,
    member_id,
    process_id,
    client_id,
    member_epoch,
    topology_epoch,
    group_epoch,
    assignment_epoch,
    assignment,
    task_kind,
    subtopology_id,
    `partition`,
    pending_revocation,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'streams_group_tasks') }}
