-- Burrow's window (FORMATS 6): the last lag_window_commits (10) effective commits of every
-- partition since its last tombstone, of both stores (Kafka commits, ZooKeeper offset-znode
-- writes: int_all_commits), with the lag of each commit. The only log end
-- known is the run's, so a commit's lag is measured against it (clamped at 0, as Burrow does).
with live as (
    select
        *,
        max(offset_generation) over (
            partition by source, group_id, topic, broker_id, `partition`
        ) as latest_generation
    from {{ ref('int_all_commits') }}
),

ranked as (
    select
        *,
        row_number() over (
            partition by source, group_id, topic, broker_id, `partition`
            order by commit_seq desc
        ) as commits_back
    from live
    where
        offset_generation = latest_generation
        and not is_tombstone
)

select
    ranked.source,
    ranked.group_id,
    ranked.topic,
    ranked.broker_id,
    ranked.`partition`,
    ranked.commit_seq,
    ranked.commits_back,
    ranked.committed_offset,
    ranked.committed_at,
    log_end.log_end_offset,
    greatest(log_end.log_end_offset - ranked.committed_offset, 0) as lag,
    ranked.run_id
from ranked
left join {{ ref('stg_kafka__log_end_offsets') }} as log_end
    on
        ranked.topic = log_end.topic
        and ranked.`partition` = log_end.`partition`
where ranked.commits_back <= {{ var('lag_window_commits') }}
