-- Every rebalance of every group, both eras (issue 21).
--   ZooKeeper: each state core/rebalance_states replayed from the txn logs (the snapshot's
--   state is no rebalance): trigger, start, end = the moment the owners matched the expected
--   assignment, else the next trigger (or the end of the history); partitions unowned meanwhile.
--   Kafka: each generation of a group's metadata records in __consumer_offsets; the trigger is
--   the member change from the generation before; the assignment is written at once (end =
--   start); partitions assigned to more than one member are double claimed.
-- A storm: more than var rebalance_storm_per_hour rebalances of the group within an hour.
with zookeeper as (
    select
        source,
        group_id,
        cast(null as int) as generation,
        state_zxid,
        trigger,
        trigger_op,
        trigger_path,
        started_at,
        coalesce(settled_at, next_at) as ended_at,
        settled,
        unowned_partitions,
        double_claimed_partitions,
        wrong_owner_partitions
    from {{ source('history_core', 'rebalance_states') }}
    where trigger <> 'snapshot'
),

generations as (
    select
        meta.group_id,
        meta.generation,
        meta.state_timestamp,
        meta.offsets_partition,
        meta.log_offset,
        lag(meta.log_offset) over (partition by meta.group_id order by meta.offsets_partition, meta.log_offset)
            as previous_log_offset
    from {{ source('group_history', 'group_metadata') }} as meta
    where not meta.is_tombstone
),

members as (
    select
        group_id,
        offsets_partition,
        log_offset,
        collect_set(member_id) as member_ids
    from {{ source('group_history', 'group_assignments') }}
    group by group_id, offsets_partition, log_offset
),

claims as (
    select
        group_id,
        offsets_partition,
        log_offset,
        count(*) as double_claimed
    from (
        select
            group_id,
            offsets_partition,
            log_offset,
            topic,
            `partition`
        from {{ source('group_history', 'group_assignments') }}
        group by group_id, offsets_partition, log_offset, topic, `partition`
        having count(distinct member_id) > 1
    )
    group by group_id, offsets_partition, log_offset
),

kafka as (
    select
        'kafka' as source,
        g.group_id,
        g.generation,
        cast(null as bigint) as state_zxid,
        case
            when g.previous_log_offset is null then 'first'
            when
                size(array_except(now.member_ids, previous.member_ids)) > 0
                and size(array_except(previous.member_ids, now.member_ids)) > 0 then 'members_replaced'
            when size(array_except(now.member_ids, previous.member_ids)) > 0 then 'member_joined'
            when size(array_except(previous.member_ids, now.member_ids)) > 0 then 'member_left'
            else 'same_members'
        end as trigger,
        cast(null as string) as trigger_op,
        cast(null as string) as trigger_path,
        g.state_timestamp as started_at,
        g.state_timestamp as ended_at,
        true as settled,
        cast(null as int) as unowned_partitions,
        cast(coalesce(claims.double_claimed, 0) as int) as double_claimed_partitions,
        cast(null as int) as wrong_owner_partitions
    from generations as g
    left join members as now
        on g.group_id = now.group_id and g.offsets_partition = now.offsets_partition and g.log_offset = now.log_offset
    left join members as previous
        on
            g.group_id = previous.group_id and g.offsets_partition = previous.offsets_partition
            and g.previous_log_offset = previous.log_offset
    left join claims
        on
            g.group_id = claims.group_id and g.offsets_partition = claims.offsets_partition
            and g.log_offset = claims.log_offset
),

both_eras as (
    select * from zookeeper
    union all
    select * from kafka
),

counted as (
    select
        *,
        count(*) over (
            partition by source, group_id
            order by unix_millis(started_at)
            range between 3599999 preceding and current row
        ) as rebalances_last_hour
    from both_eras
)

select
    '{{ var("run_id") }}' as run_id,
    source,
    group_id,
    generation,
    state_zxid,
    trigger,
    trigger_op,
    trigger_path,
    started_at,
    ended_at,
    unix_millis(ended_at) - unix_millis(started_at) as duration_ms,
    settled,
    unowned_partitions,
    double_claimed_partitions,
    wrong_owner_partitions,
    rebalances_last_hour,
    rebalances_last_hour > {{ var('rebalance_storm_per_hour') }} as is_storm
from counted
