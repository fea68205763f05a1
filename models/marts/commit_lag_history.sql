-- Every effective commit (Kafka's, and ZooKeeper's offset-znode writes) with how far behind
-- the head it was when made (int_commit_positions): lag in records and in seconds at commit time.
select
    run_id,
    source,
    group_id,
    topic,
    `partition`,
    offsets_partition,
    log_offset,
    zxid,
    commit_seq,
    committed_offset,
    committed_at,
    record_at as committed_record_at,
    head_offset,
    head_at,
    lag_at_commit,
    lag_seconds_at_commit,
    record_at_exact as lag_seconds_exact
from {{ ref('int_commit_positions') }}
