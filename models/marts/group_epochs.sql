-- Every assignment epoch of every share group (KIP-932) and Streams group (KIP-1071), both
-- kinds in one table (core/share_group_epochs, core/streams_group_epochs; the rules in
-- pipelines/spark/share_epochs.py, streams_groups.py and group_epochs.py).
-- outcome: settled (every targeted member reached the epoch, stable, before the next one) |
-- transition (never settled, superseded by the next epoch: counted and timed, never a fault) |
-- reconciling (the last epoch, not settled when the records end).
-- is_fault: an epoch that is no transition whose target is wrong - a share group with members
-- leaving an assignable partition of its subscribed topics to nobody, or sharing a partition
-- among more members than the simple assignor does (targeted_twice); a Streams group targeting
-- an active task to two members, or a task standby (or warm-up) and active to one member.
with epochs as (
    select
        run_id,
        'share' as group_type,
        {{ group_epoch_columns() }},
        partitions_targeted as targeted,
        case when members > 0 then partitions_unassigned end as unassigned,
        partitions_over_shared as targeted_twice,
        cast(null as int) as standby_with_active
    from {{ ref('stg_kaudit__share_group_epochs') }}
    union all
    select
        run_id,
        'streams' as group_type,
        {{ group_epoch_columns() }},
        active_tasks as targeted,
        cast(null as int) as unassigned,
        active_targeted_twice as targeted_twice,
        standby_with_active
    from {{ ref('stg_kaudit__streams_group_epochs') }}
),

judged as (
    select
        *,
        case when settled then 'settled' when is_transition then 'transition' else 'reconciling' end as outcome,
        concat_ws(
            '; ',
            case when unassigned > 0 then concat(unassigned, ' partitions targeted to no member') end,
            case
                when targeted_twice > 0 and group_type = 'share'
                    then concat(targeted_twice, ' partitions shared by more members than the simple assignor shares')
                when targeted_twice > 0 then concat(targeted_twice, ' active tasks targeted to two members')
            end,
            case
                when standby_with_active > 0
                    then concat(standby_with_active, ' tasks standby and active on one member')
            end
        ) as target_faults
    from epochs
),

faulted as (
    select
        *,
        coalesce(not is_transition, true) and target_faults <> '' as is_fault
    from judged
)

select
    run_id,
    group_type,
    group_id,
    assignment_epoch,
    offsets_partition,
    log_offset,
    target_at,
    members,
    members_settled,
    array_join(array_sort(member_ids), ', ') as owners,
    outcome,
    settled,
    settled_at,
    settle_ms,
    is_transition,
    targeted,
    unassigned,
    targeted_twice,
    standby_with_active,
    is_fault,
    case when is_fault then target_faults end as fault
from faulted
