-- The share groups' findings (core/share_group_findings): archived records, unassigned
-- partitions, epochs ahead, unknown state, the simple assignor's disagreements.
select
    group_id,
    topic_id,
    topic,
    `partition`,
    member_id,
    finding,
    detail,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'share_group_findings') }}
