-- The KRaft metadata log as events, one row per (log offset, event): topics created, re-created
-- (a name that had another topic id before) and deleted; partitions created, leader and ISR
-- changes (with the state before); brokers registered, fenced, unfenced, in controlled shutdown,
-- unregistered; configs set and deleted (with the value before; secrets stay [redacted]).
-- Only applied log records are events (a snapshot has no times: it is the state before them);
-- records of an aborted or unfinished metadata transaction never happened.
with records as (
    select * from {{ ref('stg_kraft__metadata_records') }}
    where applied
),

topics as (
    select * from {{ ref('int_kraft_topics') }}
),

partitions as (
    select
        p.*,
        t.topic
    from {{ ref('int_kraft_partition_states') }} as p
    left join topics as t on p.topic_id = t.topic_id
    where p.source = 'log'
),

configs as (
    select
        *,
        lag(config_value) over (
            partition by resource_type, resource_name, config_name
            order by replay_order, case when source = 'log' then 0 else 1 end, record_offset
        ) as previous_config_value
    from records
    where record_type = 'ConfigRecord'
),

events as (
    select
        r.record_offset,
        r.recorded_at,
        r.record_type,
        case when t.previous_topic_id is null then 'topic_created' else 'topic_recreated' end as event,
        r.topic_id,
        r.topic,
        t.previous_topic_id
    from records as r
    inner join topics as t on r.topic_id = t.topic_id
    where r.record_type = 'TopicRecord' and r.source = 'log'

    union all

    select
        r.record_offset,
        r.recorded_at,
        r.record_type,
        'topic_deleted' as event,
        r.topic_id,
        t.topic,
        null as previous_topic_id
    from records as r
    left join topics as t on r.topic_id = t.topic_id
    where r.record_type = 'RemoveTopicRecord' and r.source = 'log'
),

partition_events as (
    select
        *,
        'partition_created' as event
    from partitions
    where record_type = 'PartitionRecord'
    union all
    select
        *,
        'leader_changed' as event
    from partitions
    where record_type = 'PartitionChangeRecord' and leader_changed
    union all
    select
        *,
        'isr_changed' as event
    from partitions
    where record_type = 'PartitionChangeRecord' and isr_changed
),

broker_events as (
    select
        *,
        case record_type
            when 'RegisterBrokerRecord' then 'broker_registered'
            when 'UnregisterBrokerRecord' then 'broker_unregistered'
            when 'FenceBrokerRecord' then 'broker_fenced'
            when 'UnfenceBrokerRecord' then 'broker_unfenced'
        end as event
    from records
    where
        source = 'log'
        and record_type in (
            'RegisterBrokerRecord', 'UnregisterBrokerRecord', 'FenceBrokerRecord', 'UnfenceBrokerRecord'
        )
    union all
    select
        *,
        case fenced when '1' then 'broker_fenced' else 'broker_unfenced' end as event
    from records
    where source = 'log' and record_type = 'BrokerRegistrationChangeRecord' and fenced in ('1', '-1')
    union all
    select
        *,
        'broker_controlled_shutdown' as event
    from records
    where source = 'log' and record_type = 'BrokerRegistrationChangeRecord' and in_controlled_shutdown = '1'
),

history as (
    select
        record_offset,
        recorded_at,
        event,
        record_type,
        topic_id,
        topic,
        cast(null as int) as `partition`,
        cast(null as int) as leader,
        cast(null as int) as previous_leader,
        cast(null as string) as isr,
        cast(null as string) as previous_isr,
        cast(null as string) as replicas,
        previous_topic_id,
        cast(null as int) as broker_id,
        cast(null as bigint) as broker_epoch,
        cast(null as string) as resource_type,
        cast(null as string) as resource_name,
        cast(null as string) as config_name,
        cast(null as string) as config_value,
        cast(null as string) as previous_config_value
    from events

    union all

    select
        record_offset,
        recorded_at,
        event,
        record_type,
        topic_id,
        topic,
        `partition`,
        leader,
        case when event = 'partition_created' then null else previous_leader end as previous_leader,
        isr,
        case when event = 'partition_created' then null else previous_isr end as previous_isr,
        replicas,
        null as previous_topic_id,
        null as broker_id,
        null as broker_epoch,
        null as resource_type,
        null as resource_name,
        null as config_name,
        null as config_value,
        null as previous_config_value
    from partition_events

    union all

    select
        record_offset,
        recorded_at,
        event,
        record_type,
        null as topic_id,
        null as topic,
        null as `partition`,
        null as leader,
        null as previous_leader,
        null as isr,
        null as previous_isr,
        null as replicas,
        null as previous_topic_id,
        broker_id,
        broker_epoch,
        null as resource_type,
        null as resource_name,
        null as config_name,
        null as config_value,
        null as previous_config_value
    from broker_events

    union all

    select
        record_offset,
        recorded_at,
        case when config_value is null then 'config_deleted' else 'config_set' end as event,
        record_type,
        null as topic_id,
        null as topic,
        null as `partition`,
        null as leader,
        null as previous_leader,
        null as isr,
        null as previous_isr,
        null as replicas,
        null as previous_topic_id,
        null as broker_id,
        null as broker_epoch,
        resource_type,
        resource_name,
        config_name,
        config_value,
        previous_config_value
    from configs
    where source = 'log'
)

select
    {{ kaudit_run_id() }} as run_id,
    cast(record_offset as bigint) as metadata_offset,
    cast(recorded_at as timestamp) as event_at,
    cast(event as string) as event,
    cast(record_type as string) as record_type,
    cast(topic_id as string) as topic_id,
    cast(topic as string) as topic,
    cast(`partition` as int) as `partition`,
    cast(leader as int) as leader,
    cast(previous_leader as int) as previous_leader,
    cast(isr as string) as isr,
    cast(previous_isr as string) as previous_isr,
    cast(case when isr is not null then size(from_json(isr, 'array<int>')) end as int) as isr_size,
    cast(replicas as string) as replicas,
    cast(previous_topic_id as string) as previous_topic_id,
    cast(broker_id as int) as broker_id,
    cast(broker_epoch as bigint) as broker_epoch,
    cast(resource_type as string) as resource_type,
    cast(resource_name as string) as resource_name,
    cast(config_name as string) as config_name,
    cast(config_value as string) as config_value,
    cast(previous_config_value as string) as previous_config_value
from history
