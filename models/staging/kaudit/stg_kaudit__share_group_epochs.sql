-- Every assignment epoch of every share group, audited (core/share_group_epochs).
select
    {{ group_epoch_columns() }},
    partitions_targeted,
    partitions_assignable,
    partitions_initializing,
    partitions_unassigned,
    partitions_shared,
    partitions_over_shared,
    {{ kaudit_run_id() }} as run_id
from {{ source('share_streams_core', 'share_group_epochs') }}
