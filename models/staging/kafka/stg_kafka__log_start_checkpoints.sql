-- The log start offset each log dir's log-start-offset-checkpoint records (the broker advances
-- it on retention and DeleteRecords before the segments go). Several log dirs holding one
-- partition: the greatest start is the partition's.
select
    topic,
    `partition`,
    max(log_start_offset) as log_start_offset,
    {{ kaudit_run_id() }} as run_id
from {{ source('kafka', 'log_start_checkpoints') }}
group by topic, `partition`
