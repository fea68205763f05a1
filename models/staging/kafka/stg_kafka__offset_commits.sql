-- Offset-commit records of __consumer_offsets, one row per log position. A record read twice
-- (the same segment copied into two inputs) keeps one row: (offsets_partition, log_offset)
-- names a record.
with records as (
    {{ kaudit_first_copy(source('kafka', 'offset_commits')) }}
)

select
    group_id,
    topic,
    `partition`,
    committed_offset,
    leader_epoch,
    metadata,
    commit_timestamp,
    expire_timestamp,
    coalesce(is_tombstone, committed_offset is null) as is_tombstone,
    key_version,
    value_version,
    offsets_partition,
    log_offset,
    producer_id,
    coalesce(is_transactional, false) as is_transactional,
    txn_state,
    segment_file,
    {{ kaudit_run_id() }} as run_id
from records
