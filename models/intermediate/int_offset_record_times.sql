-- The timestamp of the record at every committed offset of the run (current and historical,
-- both stores): the first data batch whose last offset is at or past the offset - a compacted
-- gap or a transaction marker at the offset resolves to the next present record. Exact when
-- the offset is at or before the batch's first present record (its first_timestamp), or under
-- LogAppendTime (every record of the batch has its maxTimestamp); an offset inside a
-- CreateTime batch gets the batch's first record's timestamp (record_at_exact false: the
-- record's own is in the body, not read). No batch at or past the offset: caught up (null).
with offsets as (
    select distinct
        topic,
        `partition`,
        committed_offset
    from {{ ref('int_effective_commits') }}
    where not is_tombstone
    union
    select distinct
        topic,
        `partition`,
        committed_offset
    from {{ ref('int_committed_offsets') }}
    where broker_id is null
),

-- the batch of each offset without a range join: offsets and batches (at their last offset) in
-- one descending walk per partition; the last batch seen at or after an offset is its batch
events as (
    select
        topic,
        `partition`,
        committed_offset as at_offset,
        0 as kind,
        committed_offset,
        cast(null as struct<
            base_offset: bigint, timestamp_type: string, first_timestamp: timestamp, max_timestamp: timestamp
        >) as batch
    from offsets
    union all
    select
        topic,
        `partition`,
        last_offset as at_offset,
        1 as kind,
        cast(null as bigint) as committed_offset,
        named_struct(
            'base_offset', base_offset, 'timestamp_type', timestamp_type,
            'first_timestamp', first_timestamp, 'max_timestamp', max_timestamp
        ) as batch
    from {{ ref('stg_kafka__batch_timestamps') }}
    where not is_control
),

resolved as (
    select
        topic,
        `partition`,
        committed_offset,
        kind,
        last(batch, true) over (
            partition by topic, `partition` order by at_offset desc, kind desc
            rows between unbounded preceding and current row
        ) as batch
    from events
)

select
    resolved.topic,
    resolved.`partition`,
    resolved.committed_offset,
    case
        when batch.timestamp_type = 'LogAppendTime' then batch.max_timestamp
        else coalesce(batch.first_timestamp, batch.max_timestamp)
    end as record_at,
    (
        batch.timestamp_type = 'LogAppendTime'
        or (resolved.committed_offset <= batch.base_offset and batch.first_timestamp is not null)
    ) as record_at_exact,
    {{ kaudit_run_id() }} as run_id
from resolved
where
    resolved.kind = 0
    and resolved.batch is not null
