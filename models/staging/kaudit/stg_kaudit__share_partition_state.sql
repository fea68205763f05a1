-- The state of every share-partition (core/share_partition_state, pipelines/spark/share_groups.py):
-- replayed from its latest ShareSnapshot in __share_group_state; counts and lag null where the
-- state is unknown (state_known false).
select
    group_id,
    topic_id,
    `partition`,
    topic,
    state_known,
    start_offset,
    log_end_offset,
    acknowledged,
    archived,
    in_flight,
    lag,
    archived_offsets,
    cast(archived_max_delivery_count as int) as archived_max_delivery_count,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'share_partition_state') }}
