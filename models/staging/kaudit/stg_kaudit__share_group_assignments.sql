-- Every live share-group member and each partition of its current assignment
-- (core/share_group_assignments); a member holding nothing: null topic_id, topic, partition.
select
    group_id,
    member_id,
    client_id,
    member_epoch,
    group_epoch,
    assignment_epoch,
    topic_id,
    topic,
    `partition`,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'share_group_assignments') }}
