-- Lag of every task of every Streams group: a task (subtopology, partition) reads that
-- partition of each of its subtopology's source and repartition-source topics; one row per
-- (task, topic) with the group's committed offset there (the application's commits, the
-- group id being its application id), the log end and the lag; task_lag is the task's lag over
-- its topics, member_lag the lag of every active task of the member holding this one. A task
-- is listed for every partition of its topics with a log end or a commit; lag is null where
-- either is unknown (the sums add the known ones).
with reads as (
    select distinct
        group_id,
        subtopology_id,
        topic,
        role
    from {{ ref('stg_kaudit__streams_group_topology') }}
    where role in ('source', 'repartition_source')
),

commits as (
    select
        group_id,
        topic,
        `partition`,
        committed_offset
    from {{ ref('int_committed_offsets') }}
    where source = 'kafka'
),

task_partitions as (
    select
        reads.group_id,
        reads.subtopology_id,
        log_end.`partition`,
        reads.topic,
        reads.role
    from reads
    inner join {{ ref('stg_kafka__log_end_offsets') }} as log_end
        on reads.topic = log_end.topic
    union
    select
        reads.group_id,
        reads.subtopology_id,
        commits.`partition`,
        reads.topic,
        reads.role
    from reads
    inner join commits
        on
            reads.group_id = commits.group_id
            and reads.topic = commits.topic
),

active as (
    select
        group_id,
        subtopology_id,
        `partition`,
        array_join(array_sort(collect_set(member_id)), ', ') as active_member_id
    from {{ ref('stg_kaudit__streams_group_tasks') }}
    where assignment = 'current' and task_kind = 'active' and not pending_revocation
    group by group_id, subtopology_id, `partition`
),

lagged as (
    select
        task_partition.group_id,
        task_partition.subtopology_id,
        task_partition.`partition`,
        task_partition.topic,
        task_partition.role,
        active.active_member_id,
        commits.committed_offset,
        log_end.log_end_offset,
        log_end.log_end_offset - commits.committed_offset as lag
    from task_partitions as task_partition
    left join commits
        on
            task_partition.group_id = commits.group_id
            and task_partition.topic = commits.topic
            and task_partition.`partition` = commits.`partition`
    left join {{ ref('stg_kafka__log_end_offsets') }} as log_end
        on
            task_partition.topic = log_end.topic
            and task_partition.`partition` = log_end.`partition`
    left join active
        on
            task_partition.group_id = active.group_id
            and task_partition.subtopology_id = active.subtopology_id
            and task_partition.`partition` = active.`partition`
)

select
    {{ kaudit_run_id() }} as run_id,
    group_id,
    subtopology_id,
    `partition`,
    concat(subtopology_id, '_', `partition`) as task_id,
    topic,
    role,
    active_member_id,
    committed_offset,
    log_end_offset,
    lag,
    sum(lag) over (partition by group_id, subtopology_id, `partition`) as task_lag,
    case
        when active_member_id is not null
            then sum(lag) over (partition by group_id, active_member_id)
    end as member_lag
from lagged
