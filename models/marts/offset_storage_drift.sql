-- Groups committing offsets to both ZooKeeper and Kafka (the dual-commit migration of the
-- seed documents: offsets.storage=kafka with dual.commit.enabled): every partition either
-- store knows, side by side. drift = kafka_offset - zk_offset (null when one side lacks it).
with zookeeper as (
    select
        group_id,
        topic,
        `partition`,
        committed_offset,
        committed_at
    from {{ ref('int_committed_offsets') }}
    where
        source = 'zookeeper'
        and broker_id is null
),

kafka as (
    select
        group_id,
        topic,
        `partition`,
        committed_offset,
        committed_at
    from {{ ref('int_committed_offsets') }}
    where source = 'kafka'
),

dual_groups as (
    select group_id from zookeeper
    intersect
    select group_id from kafka
),

paired as (
    select
        coalesce(zookeeper.group_id, kafka.group_id) as group_id,
        coalesce(zookeeper.topic, kafka.topic) as topic,
        coalesce(zookeeper.`partition`, kafka.`partition`) as `partition`,
        zookeeper.committed_offset as zk_offset,
        kafka.committed_offset as kafka_offset,
        zookeeper.committed_at as zk_committed_at,
        kafka.committed_at as kafka_committed_at
    from zookeeper
    full outer join kafka
        on
            zookeeper.group_id = kafka.group_id
            and zookeeper.topic = kafka.topic
            and zookeeper.`partition` = kafka.`partition`
)

select
    {{ kaudit_run_id() }} as run_id,
    paired.group_id,
    paired.topic,
    paired.`partition`,
    paired.zk_offset,
    paired.kafka_offset,
    paired.kafka_offset - paired.zk_offset as drift,
    paired.zk_committed_at,
    paired.kafka_committed_at
from paired
where paired.group_id in (select dual_groups.group_id from dual_groups)
