-- Owners ZooKeeper-era consumers registered under /consumers/[group]/owners.
select
    group_id,
    topic,
    broker_id,
    `partition`,
    owner,
    {{ kaudit_run_id() }} as run_id
from {{ source('zookeeper', 'partition_owners') }}
