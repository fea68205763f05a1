-- The clock lag statuses are judged at: var lag_evaluated_at when given, else the newest
-- timestamp in the run's Kafka inputs (offset commits of every group, log ends) - the moment
-- the capture was taken on the coordinator's clock, so an old capture is judged as Burrow
-- would have judged it then. ZooKeeper mtimes are left out: a ZooKeeper data dir may be
-- captured (or rewritten) at another time than the Kafka logs.
with clocks as (
    select max(commit_timestamp) as seen_at from {{ ref('stg_kafka__offset_commits') }}
    union all
    select max(max_timestamp) as seen_at from {{ ref('stg_kafka__log_end_offsets') }}
)

select
    {%- if var('lag_evaluated_at', '') %}
    to_timestamp('{{ var("lag_evaluated_at") }}') as evaluated_at,
    {%- else %}
    max(seen_at) as evaluated_at,
    {%- endif %}
    {{ kaudit_run_id() }} as run_id
from clocks
