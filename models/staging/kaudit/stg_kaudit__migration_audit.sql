-- What ZooKeeper held against what KRaft holds after the migration (core/migration_audit):
-- kind (cluster_id, topic_id, replicas, isr, config, broker), the item, each side's value, its
-- status (match, differs, only_zookeeper, only_kraft) and whether it is a finding.
select
    kind,
    topic,
    `partition`,
    name,
    zookeeper,
    kraft,
    status,
    is_finding,
    {{ kaudit_run_id() }} as run_id
from {{ source('migration_core', 'migration_audit') }}
