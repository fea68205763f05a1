-- Data-loss risk of every current committed offset (both stores; not 0.7 byte positions)
-- on a partition whose log the run read:
--   lost     committed offset below the log start: records_lost records were deleted (retention,
--            DeleteRecords) before the group read them;
--   at_risk  committed offset inside the oldest segment, which retention deletes next: when its
--            greatest timestamp + retention.ms passes (cleanup.policy with delete), or now when
--            the partition is over retention.bytes without it; records_at_risk = the offsets
--            from the committed one to the segment's end;
--   ok       otherwise.
-- seconds_to_loss is measured from the run's clock (int_run_clock); <= 0: overdue.
with positions as (
    select
        offsets.run_id,
        offsets.source,
        offsets.group_id,
        offsets.topic,
        offsets.`partition`,
        offsets.committed_offset,
        partition_log.log_start_offset,
        partition_log.log_end_offset,
        partition_log.oldest_segment_base_offset,
        partition_log.oldest_segment_end_offset,
        partition_log.oldest_segment_max_timestamp,
        partition_log.oldest_segment_bytes,
        partition_log.partition_bytes,
        partition_log.segments,
        retention.retention_ms,
        retention.retention_bytes,
        retention.cleanup_policy,
        retention.config_source,
        clock.evaluated_at
    from {{ ref('int_committed_offsets') }} as offsets
    inner join {{ ref('int_partition_log') }} as partition_log
        on
            offsets.topic = partition_log.topic
            and offsets.`partition` = partition_log.`partition`
            and offsets.broker_id is null
    left join {{ ref('int_topic_retention') }} as retention
        on offsets.topic = retention.topic
    cross join {{ ref('int_run_clock') }} as clock
    where partition_log.log_start_offset is not null
),

judged as (
    select
        *,
        cleanup_policy like '%delete%' as retention_deletes,
        committed_offset >= oldest_segment_base_offset and committed_offset < oldest_segment_end_offset
        and segments > 1 as in_oldest_segment
    from positions
),

forecast as (
    select
        *,
        case
            when not (retention_deletes and in_oldest_segment) then cast(null as timestamp)
            when retention_bytes >= 0 and partition_bytes - oldest_segment_bytes >= retention_bytes then evaluated_at
            when retention_ms >= 0 then timestamp_millis(unix_millis(oldest_segment_max_timestamp) + retention_ms)
        end as deletes_at
    from judged
)

select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    committed_offset,
    log_start_offset,
    log_end_offset,
    case
        when committed_offset < log_start_offset then 'lost'
        when deletes_at is not null then 'at_risk'
        else 'ok'
    end as status,
    greatest(log_start_offset - committed_offset, 0) as records_lost,
    case
        when committed_offset >= log_start_offset and deletes_at is not null
            then oldest_segment_end_offset - committed_offset
        else 0
    end as records_at_risk,
    oldest_segment_base_offset,
    oldest_segment_end_offset,
    oldest_segment_max_timestamp,
    retention_ms,
    retention_bytes,
    config_source as retention_source,
    case when committed_offset >= log_start_offset then deletes_at end as deletes_at,
    case
        when committed_offset >= log_start_offset and deletes_at is not null
            then (unix_millis(deletes_at) - unix_millis(evaluated_at)) / 1000D
    end as seconds_to_loss,
    evaluated_at
from forecast
