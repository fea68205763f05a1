-- Who owns each partition in this run: ZooKeeper owner znodes, and the members Kafka's
-- group coordinator assigned (the audit's observed owners of Kafka groups). Unowned
-- partitions have no row (in the history, their previous owner's version is closed).
with zookeeper as (
    select
        'zookeeper' as source,
        group_id,
        topic,
        broker_id,
        `partition`,
        owner,
        run_id
    from {{ ref('stg_zookeeper__partition_owners') }}
    where owner is not null
),

kafka as (
    select
        source,
        group_id,
        topic,
        broker_id,
        `partition`,
        observed_owner as owner,
        run_id
    from {{ ref('stg_kaudit__assignment_audit') }}
    where
        source = 'kafka'
        and observed_owner is not null
),

unioned as (
    select * from zookeeper
    union all
    select * from kafka
)

select
    {{ kaudit_partition_key() }} as partition_key,
    *
from unioned
