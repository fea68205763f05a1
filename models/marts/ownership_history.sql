-- Who owned each partition when. ZooKeeper: every owner znode the txn logs wrote,
-- from its create (or the snapshot) to its delete or the next write (null: still owned at the
-- end of the history). Kafka: each member's assignment of each generation, until the group's
-- next generation; KIP-848 groups: what each member held at the end of each group epoch (its
-- current assignment and the partitions it had still to revoke), from the epoch's start until
-- the next epoch's (the records' batch times), generation = the epoch.
with owner_rows as (
    select
        *,
        lead(zxid) over (partition by path order by zxid, seq) as until_zxid,
        lead(changed_at) over (partition by path order by zxid, seq) as until_at
    from {{ ref('stg_zookeeper__znode_changes') }}
    where kind = 'consumer_owners'
),

zookeeper as (
    select
        'zookeeper' as source,
        group_id,
        topic,
        `partition`,
        broker_id,
        value as owner,
        cast(null as int) as generation,
        changed_at as owned_from,
        until_at as owned_until,
        zxid as from_zxid,
        until_zxid
    from owner_rows
    where op <> 'delete'
),

generations as (
    select
        group_id,
        generation,
        offsets_partition,
        log_offset,
        state_timestamp,
        lead(state_timestamp) over (partition by group_id order by offsets_partition, log_offset) as next_at
    from {{ ref('stg_kafka__group_generations') }}
),

kafka as (
    select
        'kafka' as source,
        a.group_id,
        a.topic,
        a.`partition`,
        cast(null as int) as broker_id,
        a.member_id as owner,
        g.generation,
        g.state_timestamp as owned_from,
        g.next_at as owned_until,
        cast(null as bigint) as from_zxid,
        cast(null as bigint) as until_zxid
    from {{ ref('stg_kafka__generation_assignments') }} as a
    inner join generations as g
        on a.group_id = g.group_id and a.offsets_partition = g.offsets_partition and a.log_offset = g.log_offset
),

kip848 as (
    select
        'kafka' as source,
        group_id,
        topic,
        `partition`,
        cast(null as int) as broker_id,
        owner,
        generation,
        held_from as owned_from,
        held_until as owned_until,
        cast(null as bigint) as from_zxid,
        cast(null as bigint) as until_zxid
    from {{ ref('stg_kaudit__epoch_owners') }}
)

select
    {{ kaudit_run_id() }} as run_id,
    *
from zookeeper
union all
select
    {{ kaudit_run_id() }} as run_id,
    *
from kafka
union all
select
    {{ kaudit_run_id() }} as run_id,
    *
from kip848
