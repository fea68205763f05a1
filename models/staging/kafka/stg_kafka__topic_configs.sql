-- Topic configs of the file given to `kaudit extract log-end --topic-configs` (topic:config=value
-- lines); a config named twice for a topic: the later line wins.
with numbered as (
    select
        topic,
        config_name,
        config_value,
        row_number() over (
            partition by topic, config_name
            order by cast(substring_index(config_file, ':', -1) as int) desc
        ) as from_last
    from {{ source('kafka', 'topic_configs') }}
)

select
    topic,
    config_name,
    config_value,
    {{ kaudit_run_id() }} as run_id
from numbered
where from_last = 1
