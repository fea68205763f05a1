-- Changes of the coordination znodes in replay order (zxid, seq), with the names their path
-- holds: /consumers/[group]/ids/[consumer], /consumers/[group]/owners|offsets/[topic]/[partition]
-- (0.7 partitions are `broker_id-partition_id`), /brokers/ids/[broker], /brokers/topics/[topic].
with changes as (
    select
        *,
        split(path, '/') as parts
    from {{ source('zookeeper_history', 'znode_changes') }}
),

named as (
    select
        *,
        case when kind in ('consumer_owners', 'consumer_offsets') then parts[5] end as partition_name
    from changes
)

select
    zxid,
    seq,
    time as changed_at,
    session,
    op,
    kind,
    path,
    cast(value as string) as value,
    version,
    ephemeral_owner,
    case when kind like 'consumer%' then parts[2] end as group_id,
    case when kind = 'consumer_ids' then parts[4] end as consumer_id,
    case
        when kind in ('consumer_owners', 'consumer_offsets') then parts[4]
        when kind = 'broker_topics' then parts[3]
    end as topic,
    case when partition_name like '%-%' then try_cast(split(partition_name, '-')[0] as int) end as broker_id,
    try_cast(case when partition_name like '%-%' then split(partition_name, '-')[1] else partition_name end as int)
        as `partition`,
    case when kind = 'broker_ids' then try_cast(parts[3] as int) end as registered_broker_id,
    {{ kaudit_run_id() }} as run_id
from named
