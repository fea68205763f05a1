-- The current committed offset of every partition of every group, from both stores:
-- Kafka (the latest effective commit in log order; a tombstone last = no offset) and
-- ZooKeeper (the offset znode).
with kafka_ranked as (
    select
        *,
        row_number() over (
            partition by group_id, topic, `partition`
            order by commit_seq desc
        ) as commits_back
    from {{ ref('int_effective_commits') }}
),

kafka as (
    select
        'kafka' as source,
        group_id,
        topic,
        cast(null as int) as broker_id,
        `partition`,
        committed_offset,
        committed_at,
        run_id
    from kafka_ranked
    where
        commits_back = 1
        and not is_tombstone
),

zookeeper as (
    select
        'zookeeper' as source,
        group_id,
        topic,
        broker_id,
        `partition`,
        committed_offset,
        committed_at,
        run_id
    from {{ ref('stg_zookeeper__offsets') }}
),

unioned as (
    select * from kafka
    union all
    select * from zookeeper
)

select
    {{ kaudit_partition_key() }} as partition_key,
    *
from unioned
