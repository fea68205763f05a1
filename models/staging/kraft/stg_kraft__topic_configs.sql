-- Topic configs of the replayed KRaft registry (ConfigRecords of resource type topic).
select
    resource_name as topic,
    name as config_name,
    value as config_value,
    {{ kaudit_run_id() }} as run_id
from {{ source('kraft', 'kraft_configs') }}
where resource_type = 'topic'
