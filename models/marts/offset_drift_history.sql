-- The dual-commit drift as a time series (issue 21): for groups committing offsets to both
-- ZooKeeper (offset-znode writes of the replayed txn logs) and Kafka (effective commits), after
-- every commit of either store, in time order, the offset each store then held for the
-- partition and drift = kafka_offset - zk_offset (null while one store holds none; a deleted
-- znode or a Kafka tombstone holds none).
with commits as (
    select *
    from {{ ref('int_all_commits') }}
    where broker_id is null
),

dual_groups as (
    select group_id from commits where source = 'zookeeper'
    intersect
    select group_id from commits where source = 'kafka'
),

held as (
    select
        commits.*,
        last_value(
            case when source = 'zookeeper' then named_struct('o', committed_offset, 'at', committed_at) end, true
        ) over by_time as zk,
        last_value(
            case when source = 'kafka' then named_struct('o', committed_offset, 'at', committed_at) end, true
        ) over by_time as kafka
    from commits
    where group_id in (select group_id from dual_groups)
    window by_time as (
        partition by group_id, topic, `partition`
        order by committed_at, source, commit_seq
        rows between unbounded preceding and current row
    )
)

select
    run_id,
    group_id,
    topic,
    `partition`,
    committed_at as changed_at,
    source as changed_store,
    commit_seq,
    zk.o as zk_offset,
    kafka.o as kafka_offset,
    kafka.o - zk.o as drift,
    zk.at as zk_committed_at,
    kafka.at as kafka_committed_at
from held
