-- Every assignment epoch of every Streams group, audited (core/streams_group_epochs).
select
    {{ group_epoch_columns() }},
    active_tasks,
    active_targeted_twice,
    standby_with_active,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'streams_group_epochs') }}
