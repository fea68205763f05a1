-- retention.ms, retention.bytes and cleanup.policy of every topic with a log in the run: the
-- KRaft ConfigRecords, else the ZooKeeper /config/topics znode, else the topic-config file of
-- `kaudit extract log-end --topic-configs`, else the broker defaults (vars retention_ms_default
-- 7 days, retention_bytes_default -1, cleanup.policy delete).
with topics as (
    select distinct topic from {{ ref('int_partition_log') }}
),

configs as (
    select
        topic,
        config_name,
        config_value,
        1 as preference,
        'kraft' as config_source
    from {{ ref('stg_kraft__topic_configs') }}
    union all
    select
        topic,
        config_name,
        config_value,
        2 as preference,
        'zookeeper' as config_source
    from {{ ref('stg_zookeeper__topic_configs') }}
    union all
    select
        topic,
        config_name,
        config_value,
        3 as preference,
        'file' as config_source
    from {{ ref('stg_kafka__topic_configs') }}
),

chosen as (
    select
        topic,
        config_name,
        config_value,
        config_source,
        row_number() over (partition by topic, config_name order by preference) as choice
    from configs
    where
        config_name in ('retention.ms', 'retention.bytes', 'cleanup.policy')
        and config_value is not null
)

select
    topics.topic,
    coalesce(cast(ms.config_value as bigint), {{ var('retention_ms_default') }}) as retention_ms,
    coalesce(cast(bytes.config_value as bigint), {{ var('retention_bytes_default') }}) as retention_bytes,
    coalesce(cleanup.config_value, 'delete') as cleanup_policy,
    coalesce(ms.config_source, bytes.config_source, cleanup.config_source, 'default') as config_source,
    {{ kaudit_run_id() }} as run_id
from topics
left join chosen as ms on topics.topic = ms.topic and ms.config_name = 'retention.ms' and ms.choice = 1
left join chosen as bytes on topics.topic = bytes.topic and bytes.config_name = 'retention.bytes' and bytes.choice = 1
left join
    chosen as cleanup
    on topics.topic = cleanup.topic and cleanup.config_name = 'cleanup.policy' and cleanup.choice = 1
