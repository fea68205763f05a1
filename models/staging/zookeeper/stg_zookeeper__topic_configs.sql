-- Topic config overrides of /config/topics/[topic] (JSON {"version":1,"config":{...}}), one
-- row per (topic, config name). A znode in both the live tree and a snapshot: the newest write.
with latest as (
    select
        substring(path, length('/config/topics/') + 1) as topic,
        from_json(cast(data as string), 'struct<config:map<string,string>>').config as config,
        row_number() over (partition by path order by mzxid desc) as copy_number
    from {{ source('zookeeper_raw', 'znodes') }}
    where
        path like '/config/topics/%'
        and instr(substring(path, length('/config/topics/') + 1), '/') = 0
)

select
    topic,
    config_name,
    config_value,
    {{ kaudit_run_id() }} as run_id
from latest
    lateral view explode(config) as config_name, config_value
where copy_number = 1
