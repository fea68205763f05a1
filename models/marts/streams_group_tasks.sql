-- Per live member of each Streams group, its active, standby and warm-up tasks: one row per
-- (member, assignment, task kind) - assignment current (what it holds, at its member epoch)
-- or target (what the coordinator computed for the assignment epoch) - with the tasks as
-- `<subtopology>_<partition>`, ordered, and those still pending revocation apart.
select
    {{ kaudit_run_id() }} as run_id,
    group_id,
    member_id,
    assignment,
    task_kind,
    max(process_id) as process_id,
    max(client_id) as client_id,
    max(member_epoch) as member_epoch,
    max(assignment_epoch) as assignment_epoch,
    max(group_epoch) as group_epoch,
    max(topology_epoch) as topology_epoch,
    count_if(not pending_revocation) as task_count,
    array_join(
        transform(
            array_sort(collect_list(case when not pending_revocation then struct(subtopology_id, `partition`) end)),
            task -> concat(task.subtopology_id, '_', task.`partition`)
        ),
        ', '
    ) as task_ids,
    count_if(pending_revocation) as pending_revocation_count,
    array_join(
        transform(
            array_sort(collect_list(case when pending_revocation then struct(subtopology_id, `partition`) end)),
            task -> concat(task.subtopology_id, '_', task.`partition`)
        ),
        ', '
    ) as pending_revocation_tasks
from {{ ref('stg_kaudit__streams_group_tasks') }}
group by group_id, member_id, assignment, task_kind
