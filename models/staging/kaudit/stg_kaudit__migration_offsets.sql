-- Every group's committed offset per partition before the migration and now
-- (core/migration_offsets): lost, moved_backwards (findings), advanced, unchanged or new.
select
    group_id,
    topic,
    `partition`,
    before_offset,
    before_at,
    after_offset,
    after_at,
    status,
    is_finding,
    {{ kaudit_run_id() }} as run_id
from {{ source('migration_core', 'migration_offsets') }}
