-- Effective commits per partition and hour, of both stores (tombstones are deletions, not
-- commits): Kafka's effective commits and ZooKeeper's offset-znode writes (int_all_commits).
select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    broker_id,
    date_trunc('HOUR', committed_at) as window_start,
    count(*) as commits,
    min(committed_at) as first_commit_at,
    max(committed_at) as last_commit_at
from {{ ref('int_all_commits') }}
where not is_tombstone
group by run_id, source, group_id, topic, `partition`, broker_id, date_trunc('HOUR', committed_at)
