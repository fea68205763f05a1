-- The share groups' findings of the run: records archived unacknowledged, partitions of a
-- subscribed topic no member holds (partition_unassigned), member epochs ahead of the
-- assignment epoch, share-partitions whose state is unknown, and owners the simple assignor
-- would not have chosen.
select
    {{ kaudit_run_id() }} as run_id,
    group_id,
    finding,
    topic_id,
    topic,
    `partition`,
    member_id,
    detail
from {{ ref('stg_kaudit__share_group_findings') }}
