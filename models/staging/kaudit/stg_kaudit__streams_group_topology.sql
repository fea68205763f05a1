-- The live topology of every Streams group (core/streams_group_topology): one row per
-- (subtopology, topic, role), role source | repartition_source | repartition_sink | changelog.
select
    group_id,
    topology_epoch,
    subtopology_id,
    topic,
    role,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'streams_group_topology') }}
