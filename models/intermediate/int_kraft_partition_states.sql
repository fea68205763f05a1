-- The state of every partition after each applied PartitionRecord / PartitionChangeRecord, in
-- replay order (a snapshot's records at its end offset, after the log records it contains).
-- A PartitionChangeRecord carries only what changes (leader -2 and null lists = unchanged),
-- so the leader, ISR and replicas are carried forward from the partition's previous record.
with changes as (
    select
        source,
        record_offset,
        replay_order,
        case when source = 'log' then 0 else 1 end as source_rank,
        recorded_at,
        record_type,
        topic_id,
        `partition`,
        leader,
        isr,
        replicas
    from {{ ref('stg_kraft__metadata_records') }}
    where applied and record_type in ('PartitionRecord', 'PartitionChangeRecord')
)

select
    source,
    record_offset,
    replay_order,
    recorded_at,
    record_type,
    topic_id,
    `partition`,
    leader is not null as leader_changed,
    isr is not null as isr_changed,
    last(leader, true) over (
        partition by topic_id, `partition` order by replay_order, source_rank, record_offset
        rows between unbounded preceding and current row
    ) as leader,
    last(leader, true) over (
        partition by topic_id, `partition` order by replay_order, source_rank, record_offset
        rows between unbounded preceding and 1 preceding
    ) as previous_leader,
    last(isr, true) over (
        partition by topic_id, `partition` order by replay_order, source_rank, record_offset
        rows between unbounded preceding and current row
    ) as isr,
    last(isr, true) over (
        partition by topic_id, `partition` order by replay_order, source_rank, record_offset
        rows between unbounded preceding and 1 preceding
    ) as previous_isr,
    last(replicas, true) over (
        partition by topic_id, `partition` order by replay_order, source_rank, record_offset
        rows between unbounded preceding and current row
    ) as replicas,
    {{ kaudit_run_id() }} as run_id
from changes
