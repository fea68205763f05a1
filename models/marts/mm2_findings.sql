-- The MirrorMaker 2 audit's findings of the run: a checkpoint that disagrees with the
-- translation recomputed from the offset syncs, a target offset ahead of the translation (a
-- failover skips records), and a group with an offset on a replicated partition that
-- MirrorMaker never checkpointed.
select
    run_id,
    source_alias,
    target_alias,
    group_id,
    topic,
    `partition`,
    finding,
    detail
from {{ ref('stg_kaudit__mm2_findings') }}
