{#- Committed offsets across runs: a new version whenever a partition's committed offset
    changed between runs (Kafka and ZooKeeper), closed when the offset is gone. -#}
{% snapshot snap_committed_offsets %}
{{
    config(
        unique_key='partition_key',
        strategy='check',
        check_cols=['committed_offset'],
        hard_deletes='invalidate',
    )
}}
select
    partition_key,
    source,
    group_id,
    topic,
    broker_id,
    `partition`,
    committed_offset,
    committed_at,
    {#- the runs that open and close a version (the MERGE sets the closing one: macros/iceberg.sql) -#}
    {{ kaudit_run_id() }} as dbt_valid_from_run_id,
    cast(null as string) as dbt_valid_to_run_id
from {{ ref('int_committed_offsets') }}
{% endsnapshot %}
