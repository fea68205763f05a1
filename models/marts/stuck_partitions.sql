-- Stuck partitions: a run of at least var stuck_min_commits consecutive effective commits of
-- one offset while the log end (the head at commit time) moved past it. One row per run;
-- still_stuck when the run reaches the partition's latest commit.
with marked as (
    select
        *,
        case when committed_offset = previous_committed_offset then 0 else 1 end as moved
    from {{ ref('int_commit_positions') }}
),

numbered as (
    select
        *,
        sum(moved) over (
            partition by source, group_id, topic, `partition`, offset_generation
            order by commit_seq rows between unbounded preceding and current row
        ) as run_number,
        max(commit_seq) over (partition by source, group_id, topic, `partition`) as latest_commit_seq
    from marked
),

runs as (
    select
        run_id,
        source,
        group_id,
        topic,
        `partition`,
        offset_generation,
        run_number,
        min(committed_offset) as committed_offset,
        count(*) as commits,
        min(committed_at) as stuck_since,
        max(committed_at) as last_commit_at,
        min_by(head_offset, commit_seq) as head_offset_at_start,
        max_by(head_offset, commit_seq) as head_offset_at_end,
        max_by(lag_seconds_at_commit, commit_seq) as lag_seconds_at_end,
        max(commit_seq) = max(latest_commit_seq) as still_stuck
    from numbered
    group by run_id, source, group_id, topic, `partition`, offset_generation, run_number
)

select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    committed_offset,
    commits,
    stuck_since,
    last_commit_at,
    head_offset_at_start,
    head_offset_at_end,
    head_offset_at_end - committed_offset as records_behind,
    lag_seconds_at_end,
    still_stuck
from runs
where
    commits >= {{ var('stuck_min_commits') }}
    and head_offset_at_end > head_offset_at_start
    and head_offset_at_end > committed_offset
