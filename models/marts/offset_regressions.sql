-- Effective commits lower than the previous effective commit of the same partition, in log
-- order (Kafka) or zxid order (ZooKeeper offset znodes). Aborted and pending transactional
-- commits are not effective, so they neither regress nor serve as the "previous" commit;
-- after a tombstone (a deleted offset znode) the offset starts anew.
with compared as (
    select
        *,
        lag(committed_offset) over (
            partition by source, group_id, topic, broker_id, `partition`, offset_generation
            order by commit_seq
        ) as previous_committed_offset
    from {{ ref('int_all_commits') }}
    where not is_tombstone
)

select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    broker_id,
    offsets_partition,
    log_offset,
    zxid,
    previous_committed_offset,
    committed_offset,
    previous_committed_offset - committed_offset as regressed_by,
    committed_at
from compared
where committed_offset < previous_committed_offset
