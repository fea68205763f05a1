-- The assignment audit of the run, with its observed owners as one comparable string.
select
    source,
    group_id,
    topic,
    broker_id,
    `partition`,
    expected_owner,
    observed_owners,
    case
        when size(coalesce(observed_owners, array())) = 0 then null
        else array_join(array_sort(array_distinct(observed_owners)), ',')
    end as observed_owner,
    status,
    {{ kaudit_run_id() }} as run_id
from {{ source('kaudit', 'assignment_audit') }}
