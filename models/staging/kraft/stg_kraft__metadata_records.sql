-- KRaft metadata records of the registry's kinds, their JSON fields as columns (one row per
-- record). Record JSON names and meanings: Apache Kafka metadata/src/main/resources/common/
-- metadata/*.json (FORMATS 7); -2 = leader unchanged, a null list = unchanged.
with records as (
    select
        source,
        offset as record_offset,
        timestamp as recorded_at,
        record_type,
        txn_state,
        source_file,
        record
    from {{ source('kraft', 'metadata_records') }}
    where record_type in (
        'TopicRecord', 'RemoveTopicRecord', 'PartitionRecord', 'PartitionChangeRecord',
        'RegisterBrokerRecord', 'UnregisterBrokerRecord', 'FenceBrokerRecord', 'UnfenceBrokerRecord',
        'BrokerRegistrationChangeRecord', 'ConfigRecord'
    )
)

select
    source,
    record_offset,
    case
        when source = 'snapshot'
            then cast(regexp_extract(source_file, '([0-9]+)-[0-9]+\\.checkpoint$', 1) as bigint) - 1
        else record_offset
    end as replay_order,
    case when source = 'log' then recorded_at end as recorded_at,
    record_type,
    coalesce(txn_state not in ('aborted', 'pending'), true) as applied,
    get_json_object(record, '$.topicId') as topic_id,
    case when record_type = 'TopicRecord' then get_json_object(record, '$.name') end as topic,
    cast(get_json_object(record, '$.partitionId') as int) as `partition`,
    nullif(cast(get_json_object(record, '$.leader') as int), -2) as leader,
    get_json_object(record, '$.isr') as isr,
    get_json_object(record, '$.replicas') as replicas,
    cast(coalesce(get_json_object(record, '$.brokerId'), get_json_object(record, '$.id')) as int) as broker_id,
    cast(coalesce(get_json_object(record, '$.brokerEpoch'), get_json_object(record, '$.epoch')) as bigint)
        as broker_epoch,
    -- RegisterBrokerRecord: true/false; BrokerRegistrationChangeRecord: 1 fenced, -1 unfenced, 0 unchanged
    get_json_object(record, '$.fenced') as fenced,
    get_json_object(record, '$.inControlledShutdown') as in_controlled_shutdown,
    case cast(get_json_object(record, '$.resourceType') as int)
        when 2 then 'topic' when 4 then 'broker' when 8 then 'broker_logger'
        when 16 then 'client_metrics' when 32 then 'group'
        else get_json_object(record, '$.resourceType')
    end as resource_type,
    get_json_object(record, '$.resourceName') as resource_name,
    case when record_type = 'ConfigRecord' then get_json_object(record, '$.name') end as config_name,
    case when record_type = 'ConfigRecord' then get_json_object(record, '$.value') end as config_value,
    {{ kaudit_run_id() }} as run_id
from records
