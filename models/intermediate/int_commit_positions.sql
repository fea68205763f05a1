-- Every effective commit of either store (int_all_commits: Kafka's in log order, ZooKeeper's
-- offset-znode writes in zxid order; tombstones aside) with where the log was when it was made:
-- the head at commit time = one past the last batch whose timestamp (maxTimestamp: the append
-- time under LogAppendTime, the greatest create time otherwise) is at or before the commit,
-- and that batch's timestamp; the timestamp of the record at the committed offset
-- (int_offset_record_times); the previous commit of the same offset generation. Lag at
-- commit: head - committed (records) and head_at - record_at (seconds), 0 when caught up.
-- A 0.7-layout ZooKeeper offset (broker_id set) is a byte position in a broker's log, not a
-- record offset: it has no place among the records and is left out.
with commits as (
    select * from {{ ref('int_all_commits') }}
    where
        not is_tombstone
        and broker_id is null
),

-- batches and commits in one walk per partition; a commit's row carries its columns through
-- the walk (no join back to the commits)
events as (
    select
        topic,
        `partition`,
        max_timestamp as at,
        0 as kind,
        last_offset + 1 as end_offset,
        max_timestamp as batch_at,
        cast(null as string) as source,
        cast(null as string) as group_id,
        cast(null as int) as commit_seq,
        cast(null as bigint) as offset_generation,
        cast(null as int) as offsets_partition,
        cast(null as bigint) as log_offset,
        cast(null as bigint) as zxid,
        cast(null as bigint) as committed_offset,
        cast(null as string) as run_id
    from {{ ref('stg_kafka__batch_timestamps') }}
    where max_timestamp is not null
    union all
    select
        topic,
        `partition`,
        committed_at as at,
        1 as kind,
        cast(null as bigint) as end_offset,
        cast(null as timestamp) as batch_at,
        source,
        group_id,
        commit_seq,
        offset_generation,
        offsets_partition,
        log_offset,
        zxid,
        committed_offset,
        run_id
    from commits
),

heads as (
    select
        *,
        max(end_offset) over (
            partition by topic, `partition` order by at, kind rows between unbounded preceding and current row
        ) as head_offset,
        max(batch_at) over (
            partition by topic, `partition` order by at, kind rows between unbounded preceding and current row
        ) as head_at
    from events
),

positioned as (
    select
        heads.source,
        heads.group_id,
        heads.topic,
        heads.`partition`,
        heads.commit_seq,
        heads.offset_generation,
        heads.offsets_partition,
        heads.log_offset,
        heads.zxid,
        heads.committed_offset,
        heads.at as committed_at,
        heads.head_offset,
        heads.head_at,
        times.record_at,
        times.record_at_exact,
        heads.run_id
    from heads
    left join {{ ref('int_offset_record_times') }} as times
        on
            heads.topic = times.topic
            and heads.`partition` = times.`partition`
            and heads.committed_offset = times.committed_offset
    where heads.kind = 1
)

select
    *,
    case when head_offset is not null then greatest(head_offset - committed_offset, 0) end as lag_at_commit,
    case
        when head_offset is null then null
        when committed_offset >= head_offset then 0D
        else greatest((unix_millis(head_at) - unix_millis(record_at)) / 1000D, 0D)
    end as lag_seconds_at_commit,
    lag(committed_offset) over w as previous_committed_offset,
    lag(committed_at) over w as previous_committed_at,
    lag(record_at) over w as previous_record_at
from positioned
window w as (partition by source, group_id, topic, `partition`, offset_generation order by commit_seq)
