-- The ZooKeeper-to-KRaft migration's findings, named as in the report's findings.csv: metadata
-- the migration changed or lost (migration_<kind>_<status>: a topic id, a partition's replicas,
-- a topic config or the cluster id that differs, or is only in ZooKeeper) with each side's
-- value, and a group's committed offset lost or moved backwards
-- (migration_offsets_lost | migration_offsets_moved_backwards) with the offsets before and after.
select
    run_id,
    concat('migration_', kind, '_', status) as finding,
    kind,
    cast(null as string) as group_id,
    topic,
    `partition`,
    name as config_name,
    zookeeper,
    kraft,
    cast(null as bigint) as before_offset,
    cast(null as bigint) as after_offset
from {{ ref('stg_kaudit__migration_audit') }}
where is_finding

union all

select
    run_id,
    concat('migration_offsets_', status) as finding,
    'committed_offset' as kind,
    group_id,
    topic,
    `partition`,
    cast(null as string) as config_name,
    cast(null as string) as zookeeper,
    cast(null as string) as kraft,
    before_offset,
    after_offset
from {{ ref('stg_kaudit__migration_offsets') }}
where is_finding
