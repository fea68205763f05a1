-- Every topic id the run's metadata names (log or snapshot), its name, and the id the same name
-- had before it (a deleted and re-created topic keeps two ids). A topic in both the snapshot and
-- the log history before the snapshot's end is one topic: the log's row (it has a time) wins.
with created as (
    select
        topic_id,
        topic,
        source,
        record_offset,
        replay_order,
        recorded_at,
        row_number() over (
            partition by topic_id
            order by case when source = 'log' then 0 else 1 end, record_offset
        ) as copy_number
    from {{ ref('stg_kraft__metadata_records') }}
    where applied and record_type = 'TopicRecord'
)

select
    topic_id,
    topic,
    source,
    record_offset,
    replay_order,
    recorded_at as created_at,
    lag(topic_id) over (partition by topic order by replay_order, record_offset) as previous_topic_id,
    {{ kaudit_run_id() }} as run_id
from created
where copy_number = 1
