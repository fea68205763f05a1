-- The commits of both stores, one shape: Kafka's effective commits in log order
-- (int_effective_commits) and ZooKeeper's offset-znode writes in zxid order (int_zk_commits).
-- A commit's position: (offsets_partition, log_offset) for Kafka, zxid for ZooKeeper.
select
    'kafka' as source,
    group_id,
    topic,
    cast(null as int) as broker_id,
    `partition`,
    commit_seq,
    offset_generation,
    committed_offset,
    committed_at,
    is_tombstone,
    offsets_partition,
    log_offset,
    cast(null as bigint) as zxid,
    run_id
from {{ ref('int_effective_commits') }}

union all

select
    'zookeeper' as source,
    group_id,
    topic,
    broker_id,
    `partition`,
    commit_seq,
    offset_generation,
    committed_offset,
    committed_at,
    is_tombstone,
    cast(null as int) as offsets_partition,
    cast(null as bigint) as log_offset,
    zxid,
    run_id
from {{ ref('int_zk_commits') }}
