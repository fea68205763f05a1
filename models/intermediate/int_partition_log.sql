-- Every data-topic partition's log as retention sees it: log start (the first batch present,
-- or the log-start checkpoint when it is further: retention and DeleteRecords advance it
-- before segments go), log end and its timestamp (the partition's greatest record timestamp),
-- and the oldest segment - the one retention deletes next: its offsets, greatest timestamp
-- and size, with the partition's total size (retention.bytes).
with segments as (
    select
        topic,
        `partition`,
        segment_base_offset,
        max(max_timestamp) as max_timestamp,
        sum(size_bytes) as size_bytes
    from {{ ref('stg_kafka__batch_timestamps') }}
    group by topic, `partition`, segment_base_offset
),

ranked as (
    select
        *,
        row_number() over (partition by topic, `partition` order by segment_base_offset) as segment_number,
        lead(segment_base_offset) over (partition by topic, `partition` order by segment_base_offset)
            as next_segment_base_offset,
        count(*) over (partition by topic, `partition`) as segments,
        sum(size_bytes) over (partition by topic, `partition`) as partition_bytes
    from segments
)

select
    log_end.topic,
    log_end.`partition`,
    greatest(log_end.log_start_offset, checkpoints.log_start_offset) as log_start_offset,
    log_end.log_end_offset,
    log_end.max_timestamp as log_end_at,
    oldest.segment_base_offset as oldest_segment_base_offset,
    coalesce(oldest.next_segment_base_offset, log_end.log_end_offset) as oldest_segment_end_offset,
    oldest.max_timestamp as oldest_segment_max_timestamp,
    oldest.size_bytes as oldest_segment_bytes,
    oldest.segments,
    oldest.partition_bytes,
    log_end.run_id
from {{ ref('stg_kafka__log_end_offsets') }} as log_end
left join ranked as oldest
    on
        log_end.topic = oldest.topic
        and log_end.`partition` = oldest.`partition`
        and oldest.segment_number = 1
left join {{ ref('stg_kafka__log_start_checkpoints') }} as checkpoints
    on
        log_end.topic = checkpoints.topic
        and log_end.`partition` = checkpoints.`partition`
