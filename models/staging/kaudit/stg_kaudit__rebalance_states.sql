-- The group states `kaudit build` replayed (core/rebalance_states, pipelines/spark/rebalances.py
-- and generations.py), one row per state of a group, both eras, in the table's column order: a
-- ZooKeeper state is keyed by its trigger's zxid, a Kafka-era one by the record that began it.
select
    source,
    group_id,
    state_zxid,
    started_at,
    trigger,
    trigger_op,
    trigger_path,
    next_at,
    settled,
    settled_at,
    unowned_partitions,
    double_claimed_partitions,
    wrong_owner_partitions,
    group_protocol,
    generation,
    offsets_partition,
    log_offset,
    rebalance_started_at,
    stuck,
    settle_window_ms
from {{ source('history_core', 'rebalance_states') }}
