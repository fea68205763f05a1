-- The partitions each member of a classic group was assigned in each generation (the group
-- metadata records' assignments), one row per (record, member, topic, partition): a record
-- read twice gives the same rows, kept once.
select distinct
    group_id,
    generation,
    offsets_partition,
    log_offset,
    member_id,
    topic,
    `partition`
from {{ source('group_history', 'group_assignments') }}
