-- The MirrorMaker 2 audit's findings (core/mm2_findings).
select
    source_alias,
    target_alias,
    group_id,
    topic,
    `partition`,
    finding,
    detail,
    {{ kaudit_run_id() }} as run_id
from {{ source('mm2_core', 'mm2_findings') }}
