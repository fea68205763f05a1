-- MirrorMaker 2 failover readiness (core/mm2_failover): per replication pair, group and source
-- partition, the source offset, MirrorMaker's translation, the newest checkpoint and the
-- target's offset, with what a failover now re-reads or skips.
select
    source_alias,
    target_alias,
    group_id,
    topic,
    `partition`,
    target_topic,
    source_committed_offset,
    sync_upstream_offset,
    sync_downstream_offset,
    translated_offset,
    expected_target_offset,
    checkpoint_upstream_offset,
    checkpoint_downstream_offset,
    checkpoint_recomputed_offset,
    checkpoint_status,
    target_committed_offset,
    records_reread,
    records_skipped,
    {{ kaudit_run_id() }} as run_id
from {{ source('mm2_core', 'mm2_failover') }}
