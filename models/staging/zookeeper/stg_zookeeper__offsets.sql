-- Offsets ZooKeeper-era consumers committed to /consumers/[group]/offsets.
select
    group_id,
    topic,
    broker_id,
    `partition`,
    committed_offset,
    mtime as committed_at,
    {{ kaudit_run_id() }} as run_id
from {{ source('zookeeper', 'zk_offsets') }}
