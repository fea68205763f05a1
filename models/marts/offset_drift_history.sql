-- The dual-commit drift as a time series: for groups committing offsets to both
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
    select group_id from commits
    where source = 'zookeeper'
    intersect
    select group_id from commits
    where source = 'kafka'
),

held as (
    select
        commits.*,
        last_value(
            case
                when
                    commits.source = 'zookeeper'
                    then named_struct('o', commits.committed_offset, 'at', commits.committed_at)
            end,
            true
        ) over by_time as zk,
        last_value(
            case
                when
                    commits.source = 'kafka'
                    then named_struct('o', commits.committed_offset, 'at', commits.committed_at)
            end,
            true
        ) over by_time as kafka
    from commits
    where commits.group_id in (select dual_groups.group_id from dual_groups)
    window by_time as (
        partition by group_id, topic, `partition`
        order by committed_at, source, commit_seq
        rows between unbounded preceding and current row
    )
)

select
    held.run_id,
    held.group_id,
    held.topic,
    held.`partition`,
    held.committed_at as changed_at,
    held.source as changed_store,
    held.commit_seq,
    zk.o as zk_offset,
    kafka.o as kafka_offset,
    kafka.o - zk.o as drift,
    zk.at as zk_committed_at,
    kafka.at as kafka_committed_at
from held
