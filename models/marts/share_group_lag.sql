-- One row per share-partition of a share group (group, topic id, partition): its start offset,
-- the log end, the delivery states at or above the start and the lag - the records from the
-- start offset to the log end whose delivery has not completed (log end - start - acknowledged
-- - archived, as the broker answers listShareGroupOffsets) - with the members whose current
-- assignment holds the partition. A partition some member holds but with no share-partition
-- state yet (never started) has a row with state_known false and no lag.
with owners as (
    select
        group_id,
        topic_id,
        max(topic) as topic,
        `partition`,
        array_join(array_sort(collect_set(member_id)), ', ') as owners,
        count(distinct member_id) as owner_count
    from {{ ref('stg_kaudit__share_group_assignments') }}
    where `partition` is not null
    group by group_id, topic_id, `partition`
)

select
    {{ kaudit_run_id() }} as run_id,
    coalesce(share_state.group_id, owners.group_id) as group_id,
    coalesce(share_state.topic_id, owners.topic_id) as topic_id,
    coalesce(share_state.topic, owners.topic) as topic,
    coalesce(share_state.`partition`, owners.`partition`) as `partition`,
    coalesce(share_state.state_known, false) as state_known,
    share_state.start_offset,
    share_state.log_end_offset,
    share_state.acknowledged,
    share_state.archived,
    share_state.in_flight,
    share_state.lag,
    owners.owners,
    coalesce(owners.owner_count, 0) as owner_count
from {{ ref('stg_kaudit__share_partition_state') }} as share_state
full outer join owners
    on
        share_state.group_id = owners.group_id
        and share_state.topic_id = owners.topic_id
        and share_state.`partition` = owners.`partition`
