-- Where each group restarts if the run's MirrorMaker 2 target cluster took over now, per
-- replication pair, group and source partition: the restart position (the group's committed
-- offset on the target) against the position that re-reads and skips nothing, the records a
-- failover re-reads (duplicates) or skips (loss), and how many findings the partition has.
with findings as (
    select
        source_alias,
        target_alias,
        group_id,
        topic,
        `partition`,
        count(*) as findings
    from {{ ref('stg_kaudit__mm2_findings') }}
    group by source_alias, target_alias, group_id, topic, `partition`
)

select
    f.run_id,
    f.source_alias,
    f.target_alias,
    f.group_id,
    f.topic,
    f.`partition`,
    f.target_topic,
    f.source_committed_offset,
    f.translated_offset,
    f.expected_target_offset,
    f.checkpoint_downstream_offset,
    f.checkpoint_status,
    f.target_committed_offset as restart_offset,
    case
        when f.source_committed_offset is null then 'no_offset_on_source'
        when f.target_committed_offset is null then 'no_offset_on_target'
        when f.records_skipped > 0 then 'skips_records'
        when f.records_reread > 0 then 'rereads_records'
        else 'exact'
    end as failover_outcome,
    f.records_reread,
    f.records_skipped,
    coalesce(n.findings, 0) as findings
from {{ ref('stg_kaudit__mm2_failover') }} as f
left join findings as n
    on
        f.source_alias = n.source_alias
        and f.target_alias = n.target_alias
        and f.group_id = n.group_id
        and f.topic = n.topic
        and f.`partition` = n.`partition`
