-- Every remote segment of tiered storage (KIP-405) the run's `__remote_log_metadata` holds:
-- its offsets, greatest timestamp and size (from its RemoteLogSegmentMetadataRecord), its
-- latest state (the last event in log order: all of a partition's events are in one metadata
-- partition) and whether it holds readable remote data: copied (COPY_SEGMENT_FINISHED), not
-- being deleted, and its partition not deleted (no RemotePartitionDeleteMetadataRecord).
with events as (
    select * from {{ source('kafka', 'remote_log_metadata') }}
),

created as (
    select
        remote_segment_id,
        topic,
        topic_id,
        `partition`,
        start_offset,
        end_offset,
        max_timestamp,
        cast(segment_size_bytes as bigint) as segment_size_bytes,
        event_timestamp as copy_started_at,
        row_number() over (partition by remote_segment_id order by metadata_partition, log_offset) as copy_number
    from events
    where record_type = 'RemoteLogSegmentMetadataRecord'
),

latest as (
    select
        remote_segment_id,
        state,
        event_timestamp as state_at,
        row_number() over (
            partition by remote_segment_id order by metadata_partition desc, log_offset desc
        ) as recency
    from events
    where remote_segment_id is not null
),

deleted_partitions as (
    select distinct
        topic_id,
        `partition`
    from events
    where record_type = 'RemotePartitionDeleteMetadataRecord'
)

select
    created.remote_segment_id,
    created.topic,
    created.topic_id,
    created.`partition`,
    created.start_offset,
    created.end_offset,
    created.max_timestamp,
    created.segment_size_bytes,
    created.copy_started_at,
    latest.state,
    latest.state_at,
    latest.state = 'COPY_SEGMENT_FINISHED' and deleted_partitions.topic_id is null as is_live,
    {{ kaudit_run_id() }} as run_id
from created
inner join latest
    on created.remote_segment_id = latest.remote_segment_id and latest.recency = 1
left join deleted_partitions
    on created.topic_id = deleted_partitions.topic_id and created.`partition` = deleted_partitions.`partition`
where created.copy_number = 1
