-- The effective offset commits of the run (FORMATS 2, OffsetMetadataManager): regular
-- commits, and transactional commits whose transaction COMMITTED. Aborted and pending ones
-- never became offsets and are dropped here, so no mart counts them.
--
-- Order is log order in the group's __consumer_offsets partition (offsets_partition,
-- log_offset). A transactional commit takes the log position of its offset record, not of
-- its COMMIT marker: when a transactional and a regular commit compete, the greater log
-- offset wins - exactly what the broker keeps on COMMIT.
--
-- A tombstone deletes the partition's offset: commits after it start a new offset_generation.
with effective as (
    select *
    from {{ ref('stg_kafka__offset_commits') }}
    where
        not is_transactional
        or txn_state = 'committed'
)

select
    group_id,
    topic,
    `partition`,
    row_number() over (
        partition by group_id, topic, `partition`
        order by offsets_partition, log_offset
    ) as commit_seq,
    sum(case when is_tombstone then 1 else 0 end) over (
        partition by group_id, topic, `partition`
        order by offsets_partition, log_offset
        rows between unbounded preceding and current row
    ) as offset_generation,
    committed_offset,
    leader_epoch,
    metadata,
    commit_timestamp as committed_at,
    is_tombstone,
    is_transactional,
    producer_id,
    offsets_partition,
    log_offset,
    run_id
from effective
