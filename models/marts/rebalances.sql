-- Every rebalance of every group, both eras, from core/rebalance_states:
--   ZooKeeper (pipelines/spark/rebalances.py): each state replayed from the txn logs (the
--   snapshot's state is no rebalance): trigger, start, end = the moment the owners matched the
--   expected assignment, else the next trigger (or the end of the history); partitions unowned
--   meanwhile.
--   Kafka (pipelines/spark/generations.py): each generation of a classic group (the leader's
--   assignment audited against the build's assignors; written at once: end = start when it
--   matched) and each epoch of a KIP-848 group (settled when every targeted member was stable at
--   the epoch; times: its records' batch times); the trigger is the member change from the state
--   before; partitions assigned to more than one member are double claimed.
-- Settled (pipelines/settle.py, models/README.md "Settled states"): a state that never settled
-- and was followed by another is a transition, counted and timed here and never a past fault;
-- a rebalance is a run of transitions and the state that settled it (rebalance_started_at: its
-- first state's start; rebalance_ms: to this state's end); is_stuck: it did not settle within
-- the build's stuck limit (on the run's last state).
-- A storm: more than var rebalance_storm_per_hour rebalances of the group within an hour (only
-- rebalances with a start time count).
with states as (
    select
        *,
        coalesce(settled_at, next_at) as ended_at
    from {{ ref('stg_kaudit__rebalance_states') }}
    where trigger <> 'snapshot'
),

counted as (
    select
        *,
        case
            when started_at is not null
                then count(*) over (
                    partition by source, group_id, started_at is null
                    order by unix_millis(started_at)
                    range between 3599999 preceding and current row
                )
        end as rebalances_last_hour
    from states
)

select
    {{ kaudit_run_id() }} as run_id,
    source,
    group_id,
    group_protocol,
    generation,
    state_zxid,
    offsets_partition,
    log_offset,
    trigger,
    trigger_op,
    trigger_path,
    started_at,
    ended_at,
    unix_millis(ended_at) - unix_millis(started_at) as duration_ms,
    settled,
    not settled and ended_at is not null as is_transition,
    rebalance_started_at,
    unix_millis(ended_at) - unix_millis(rebalance_started_at) as rebalance_ms,
    coalesce(stuck, false) as is_stuck,
    settle_window_ms,
    unowned_partitions,
    double_claimed_partitions,
    wrong_owner_partitions,
    rebalances_last_hour,
    coalesce(rebalances_last_hour > {{ var('rebalance_storm_per_hour') }}, false) as is_storm
from counted
