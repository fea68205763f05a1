-- One row per (source, group, topic, partition): the current committed offset and its lag
-- behind the partition's log end (null when the log end is unknown; ZooKeeper 0.7 offsets,
-- keyed by broker, are byte positions and get no log end).
--
-- Lag in time: lag_seconds = the log end's timestamp (the partition's greatest
-- record timestamp) - the timestamp of the record at the committed offset (the next present
-- one across compacted gaps and markers): the age of the oldest unconsumed record at the run's
-- end of data; 0 when caught up (no record at or past the offset); null without batch headers.
select
    offsets.run_id,
    offsets.source,
    offsets.group_id,
    offsets.topic,
    offsets.`partition`,
    offsets.broker_id,
    offsets.committed_offset,
    log_end.log_end_offset,
    log_end.log_end_offset - offsets.committed_offset as lag,
    offsets.committed_at,
    times.record_at as committed_record_at,
    log_end.max_timestamp as log_end_at,
    case
        when log_end.log_end_offset is null or partition_log.oldest_segment_base_offset is null
            then cast(null as double)
        when offsets.committed_offset >= log_end.log_end_offset or times.record_at is null then 0D
        when log_end.max_timestamp is null then cast(null as double)
        else greatest((unix_millis(log_end.max_timestamp) - unix_millis(times.record_at)) / 1000D, 0D)
    end as lag_seconds,
    case
        when log_end.log_end_offset is null or partition_log.oldest_segment_base_offset is null
            then cast(null as boolean)
        when offsets.committed_offset >= log_end.log_end_offset or times.record_at is null then true
        else times.record_at_exact
    end as lag_seconds_exact
from {{ ref('int_committed_offsets') }} as offsets
left join {{ ref('stg_kafka__log_end_offsets') }} as log_end
    on
        offsets.topic = log_end.topic
        and offsets.`partition` = log_end.`partition`
        and offsets.broker_id is null
left join {{ ref('int_partition_log') }} as partition_log
    on
        log_end.topic = partition_log.topic
        and log_end.`partition` = partition_log.`partition`
left join {{ ref('int_offset_record_times') }} as times
    on
        log_end.topic = times.topic
        and log_end.`partition` = times.`partition`
        and offsets.committed_offset = times.committed_offset
