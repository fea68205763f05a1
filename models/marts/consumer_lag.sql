-- One row per (source, group, topic, partition): the current committed offset and its lag
-- behind the partition's log end (null when the log end is unknown; ZooKeeper 0.7 offsets,
-- keyed by broker, are byte positions and get no log end).
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
    offsets.committed_at
from {{ ref('int_committed_offsets') }} as offsets
left join {{ ref('stg_kafka__log_end_offsets') }} as log_end
    on
        offsets.topic = log_end.topic
        and offsets.`partition` = log_end.`partition`
        and offsets.broker_id is null
