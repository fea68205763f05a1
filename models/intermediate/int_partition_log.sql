-- Every data-topic partition's log as retention sees it: log start, log end and its timestamp
-- (the partition's greatest record timestamp), and the oldest segment - the one retention
-- deletes next: its offsets, greatest timestamp and size, with the partition's total size
-- (retention.bytes).
-- Log start: the greatest of the log-start checkpoint (retention and DeleteRecords advance it
-- before segments go) and the first offset still held, locally (the first batch present) or in
-- remote storage (the first live remote segment, tiered storage); a topic with
-- remote.storage.enable whose remote metadata the run lacks: the checkpoint when there is one,
-- as its local segments start past the remote ones. log_start_source says which it was.
-- With live remote segments, the oldest segment is the oldest remote one (retention.ms and
-- retention.bytes delete remote segments; local retention only drops copies), and the size is
-- the remote segments' and the local segments' past them.
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
),

remote as (
    select
        topic,
        `partition`,
        start_offset,
        end_offset,
        max_timestamp,
        segment_size_bytes,
        row_number() over (partition by topic, `partition` order by start_offset) as segment_number,
        min(start_offset) over (partition by topic, `partition`) as remote_log_start_offset,
        max(end_offset) over (partition by topic, `partition`) + 1 as remote_log_end_offset,
        count(*) over (partition by topic, `partition`) as segments,
        sum(segment_size_bytes) over (partition by topic, `partition`) as partition_bytes
    from {{ ref('stg_kafka__remote_log_segments') }}
    where is_live
),

remote_oldest as (
    select
        remote.*,
        coalesce(sum(local_segments.size_bytes), 0) as local_bytes_past,
        count(local_segments.segment_base_offset) as local_segments_past
    from remote
    left join segments as local_segments
        on
            remote.topic = local_segments.topic
            and remote.`partition` = local_segments.`partition`
            and remote.remote_log_end_offset <= local_segments.segment_base_offset
    where remote.segment_number = 1
    group by
        remote.topic, remote.`partition`, remote.start_offset, remote.end_offset, remote.max_timestamp,
        remote.segment_size_bytes, remote.segment_number, remote.remote_log_start_offset,
        remote.remote_log_end_offset, remote.segments, remote.partition_bytes
),

tiered_topics as (
    select distinct topic from {{ ref('stg_kraft__topic_configs') }}
    where config_name = 'remote.storage.enable' and lower(config_value) = 'true'
    union
    select distinct topic from {{ ref('stg_zookeeper__topic_configs') }}
    where config_name = 'remote.storage.enable' and lower(config_value) = 'true'
    union
    select distinct topic from {{ ref('stg_kafka__topic_configs') }}
    where config_name = 'remote.storage.enable' and lower(config_value) = 'true'
),

starts as (
    select
        log_end.topic,
        log_end.`partition`,
        log_end.log_start_offset as local_log_start_offset,
        checkpoints.log_start_offset as checkpoint_log_start_offset,
        remote_oldest.remote_log_start_offset,
        remote_oldest.remote_log_end_offset,
        tiered_topics.topic is not null or remote_oldest.topic is not null as is_tiered,
        case
            when remote_oldest.topic is null and tiered_topics.topic is not null
                then coalesce(checkpoints.log_start_offset, log_end.log_start_offset)
            else greatest(
                checkpoints.log_start_offset,
                least(log_end.log_start_offset, remote_oldest.remote_log_start_offset)
            )
        end as log_start_offset
    from {{ ref('stg_kafka__log_end_offsets') }} as log_end
    left join {{ ref('stg_kafka__log_start_checkpoints') }} as checkpoints
        on
            log_end.topic = checkpoints.topic
            and log_end.`partition` = checkpoints.`partition`
    left join remote_oldest
        on
            log_end.topic = remote_oldest.topic
            and log_end.`partition` = remote_oldest.`partition`
    left join tiered_topics
        on log_end.topic = tiered_topics.topic
)

select
    log_end.topic,
    log_end.`partition`,
    starts.log_start_offset,
    case
        when starts.log_start_offset is null then cast(null as string)
        when starts.log_start_offset = starts.checkpoint_log_start_offset then 'checkpoint'
        when starts.log_start_offset = starts.remote_log_start_offset then 'remote'
        else 'local'
    end as log_start_source,
    starts.local_log_start_offset,
    starts.remote_log_start_offset,
    starts.remote_log_end_offset,
    starts.is_tiered,
    log_end.log_end_offset,
    log_end.max_timestamp as log_end_at,
    coalesce(remote_oldest.start_offset, oldest.segment_base_offset) as oldest_segment_base_offset,
    case
        when remote_oldest.topic is not null then remote_oldest.end_offset + 1
        else coalesce(oldest.next_segment_base_offset, log_end.log_end_offset)
    end as oldest_segment_end_offset,
    coalesce(remote_oldest.max_timestamp, oldest.max_timestamp) as oldest_segment_max_timestamp,
    coalesce(remote_oldest.segment_size_bytes, oldest.size_bytes) as oldest_segment_bytes,
    coalesce(remote_oldest.segments + remote_oldest.local_segments_past, oldest.segments) as segments,
    coalesce(remote_oldest.partition_bytes + remote_oldest.local_bytes_past, oldest.partition_bytes)
        as partition_bytes,
    log_end.run_id
from {{ ref('stg_kafka__log_end_offsets') }} as log_end
inner join starts
    on log_end.topic = starts.topic and log_end.`partition` = starts.`partition`
left join ranked as oldest
    on
        log_end.topic = oldest.topic
        and log_end.`partition` = oldest.`partition`
        and oldest.segment_number = 1
left join remote_oldest
    on
        log_end.topic = remote_oldest.topic
        and log_end.`partition` = remote_oldest.`partition`
