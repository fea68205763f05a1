-- Who held each partition at the end of each epoch of a KIP-848 group (core/settled_audit,
-- pipelines/spark/generations.py: the members' current assignments plus the partitions pending
-- revocation), one row per (epoch, partition, member); from the epoch's start until the next's.
-- Member ids are the clients' base64 UUIDs: a double-claimed partition's list splits on ", ".
select
    group_id,
    generation,
    offsets_partition,
    log_offset,
    topic,
    `partition`,
    explode(split(observed_owner, ', ')) as owner,
    held_from,
    held_until
from {{ source('history_core', 'settled_audit') }}
where group_protocol = 'consumer' and observed_owner is not null
