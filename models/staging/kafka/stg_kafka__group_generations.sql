-- Group metadata records of __consumer_offsets (classic groups), one row per record (log
-- position): every generation of every group, not only the newest. A record read twice (the
-- same segment copied into two inputs) keeps one row: (offsets_partition, log_offset) names a record.
with records as (
    {{ kaudit_first_copy(source('group_history', 'group_metadata')) }}
)

select
    group_id,
    generation,
    protocol_type,
    protocol,
    leader,
    state_timestamp,
    is_tombstone,
    offsets_partition,
    log_offset
from records
