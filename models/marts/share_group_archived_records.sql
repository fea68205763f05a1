-- Records a share group archived without acknowledging them: released or rejected until the
-- broker gave up (delivery count at group.share.delivery.count.limit), data the application
-- never processed. One row per archived offset at or above the share-partition's start, with
-- the partition's count of them and their greatest delivery count.
select
    {{ kaudit_run_id() }} as run_id,
    group_id,
    topic_id,
    topic,
    `partition`,
    archived_offset,
    archived as archived_in_partition,
    archived_max_delivery_count as max_delivery_count,
    start_offset,
    log_end_offset
from {{ ref('stg_kaudit__share_partition_state') }}
    lateral view explode(archived_offsets) archived_list as archived_offset
where state_known and archived > 0
