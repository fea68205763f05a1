-- ZooKeeper offset commits: every write of /consumers/[group]/offsets/[topic]/[partition]
-- the txn logs replayed (creates and setData; the snapshot's offset nodes count as the commit
-- they were last written by, at their mtime), in zxid order per partition. A delete of the node
-- is a tombstone: commits after it start a new offset_generation, as after a Kafka tombstone.
-- A value that is not a decimal offset is no commit (it stays in stg_zookeeper__znode_changes).
with writes as (
    select
        group_id,
        topic,
        broker_id,
        `partition`,
        zxid,
        seq,
        op = 'delete' as is_tombstone,
        case when op <> 'delete' then try_cast(trim(value) as bigint) end as committed_offset,
        changed_at as committed_at,
        session,
        run_id
    from {{ ref('stg_zookeeper__znode_changes') }}
    where
        kind = 'consumer_offsets'
        and `partition` is not null
)

select
    group_id,
    topic,
    broker_id,
    `partition`,
    row_number() over (
        partition by group_id, topic, broker_id, `partition`
        order by zxid, seq
    ) as commit_seq,
    sum(case when is_tombstone then 1 else 0 end) over (
        partition by group_id, topic, broker_id, `partition`
        order by zxid, seq
        rows between unbounded preceding and current row
    ) as offset_generation,
    committed_offset,
    committed_at,
    is_tombstone,
    zxid,
    session,
    run_id
from writes
where
    is_tombstone
    or committed_offset is not null
