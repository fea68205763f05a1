-- Effective commits per partition and hour (tombstones are deletions, not commits).
select
    run_id,
    group_id,
    topic,
    `partition`,
    date_trunc('HOUR', committed_at) as window_start,
    count(*) as commits,
    min(committed_at) as first_commit_at,
    max(committed_at) as last_commit_at
from {{ ref('int_effective_commits') }}
where not is_tombstone
group by run_id, group_id, topic, `partition`, date_trunc('HOUR', committed_at)
