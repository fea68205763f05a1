-- The timestamp of the record at every committed offset of the run (current and historical,
-- both stores): the first data batch whose last offset is at or past the offset - a compacted
-- gap or a transaction marker at the offset resolves to the next present record. Exact when
-- the offset is at or before the batch's first present record (its first_timestamp), or under
-- LogAppendTime (every record of the batch has its maxTimestamp); an offset inside a
-- CreateTime batch gets the batch's first record's timestamp (record_at_exact false: the
-- record's own is in the body, not read). No batch at or past the offset: caught up (null).
with offsets as (
    select distinct topic, `partition`, committed_offset
    from {{ ref('int_effective_commits') }}
    where not is_tombstone
    union
    select distinct topic, `partition`, committed_offset
    from {{ ref('int_committed_offsets') }}
    where broker_id is null
),

candidates as (
    select
        offsets.topic,
        offsets.`partition`,
        offsets.committed_offset,
        batches.base_offset,
        batches.timestamp_type,
        batches.first_timestamp,
        batches.max_timestamp,
        row_number() over (
            partition by offsets.topic, offsets.`partition`, offsets.committed_offset
            order by batches.base_offset
        ) as nearest
    from offsets
    inner join {{ ref('stg_kafka__batch_timestamps') }} as batches
        on batches.topic = offsets.topic
        and batches.`partition` = offsets.`partition`
        and batches.last_offset >= offsets.committed_offset
        and not batches.is_control
)

select
    topic,
    `partition`,
    committed_offset,
    case
        when timestamp_type = 'LogAppendTime' then max_timestamp
        else coalesce(first_timestamp, max_timestamp)
    end as record_at,
    (timestamp_type = 'LogAppendTime' or (committed_offset <= base_offset and first_timestamp is not null))
        as record_at_exact,
    '{{ var("run_id") }}' as run_id
from candidates
where nearest = 1
