-- Log end of each data-topic partition at capture time. Several log dirs may hold replicas
-- of one partition: the greatest end (the leader's, or the most recent copy) is the log end.
select
    topic,
    `partition`,
    min(log_start_offset) as log_start_offset,
    max(log_end_offset) as log_end_offset,
    max(max_timestamp) as max_timestamp,
    {{ kaudit_run_id() }} as run_id
from {{ source('kafka', 'log_end_offsets') }}
group by topic, `partition`
