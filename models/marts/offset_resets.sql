-- Offset resets: commits that jump where a reset (auto.offset.reset, kafka-consumer-groups
-- --reset-offsets, seek) puts a group, without the group having consumed the gap:
--   earliest   back to the log start or below it;
--   latest     forward onto the head at commit time (int_commit_positions.head_offset);
--   timestamp  back, or forward, onto the first offset of a batch (offsetsForTimes answers the
--              first offset of the first batch at or past a timestamp; reset_to_timestamp).
-- A forward or timestamp jump counts only when it skips at least var reset_min_records records
-- and, on a partition with at least 3 forward steps, more than var reset_step_factor times their
-- median: a group that consumed the gap would have committed on the way.
-- size_records = the jump (negative: rewound); size_seconds = the timestamp of the record the
-- group lands on (the head's, for latest) - that of the record it was at.
with steps as (
    select
        positions.*,
        partition_log.log_start_offset,
        positions.committed_offset - positions.previous_committed_offset as jump,
        percentile_approx(
            case
                when positions.committed_offset > positions.previous_committed_offset
                    then positions.committed_offset - positions.previous_committed_offset
            end, 0.5
        ) over (
            partition by positions.source, positions.group_id, positions.topic, positions.`partition`
        ) as median_step,
        count(case when positions.committed_offset > positions.previous_committed_offset then 1 end)
            over (
                partition by positions.source, positions.group_id, positions.topic, positions.`partition`
            ) as forward_steps
    from {{ ref('int_commit_positions') }} as positions
    left join {{ ref('int_partition_log') }} as partition_log
        on
            positions.topic = partition_log.topic
            and positions.`partition` = partition_log.`partition`
    where
        positions.previous_committed_offset is not null
        and positions.committed_offset <> positions.previous_committed_offset
),

batch_starts as (
    select distinct
        topic,
        `partition`,
        base_offset,
        first_timestamp
    from {{ ref('stg_kafka__batch_timestamps') }}
    where not is_control
),

classified as (
    select
        steps.*,
        batch_starts.first_timestamp as batch_first_timestamp,
        abs(steps.jump) >= {{ var('reset_min_records') }}
        and (steps.forward_steps < 3 or abs(steps.jump) > {{ var('reset_step_factor') }} * steps.median_step)
            as unexplained,
        case
            when steps.jump < 0 and steps.committed_offset <= steps.log_start_offset then 'earliest'
            when steps.jump > 0 and steps.committed_offset >= steps.head_offset then 'latest'
            when batch_starts.base_offset is not null then 'timestamp'
        end as candidate
    from steps
    left join batch_starts
        on
            steps.topic = batch_starts.topic
            and steps.`partition` = batch_starts.`partition`
            and steps.committed_offset = batch_starts.base_offset
)

select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    offsets_partition,
    log_offset,
    zxid,
    candidate as reset_to,
    previous_committed_offset,
    committed_offset,
    jump as size_records,
    (
        unix_millis(case when candidate = 'latest' then head_at else coalesce(record_at, head_at) end)
        - unix_millis(previous_record_at)
    ) / 1000D as size_seconds,
    case when candidate = 'timestamp' then batch_first_timestamp end as reset_to_timestamp,
    previous_committed_at,
    committed_at,
    head_offset,
    log_start_offset
from classified
where
    candidate = 'earliest'
    or (candidate in ('latest', 'timestamp') and unexplained)
