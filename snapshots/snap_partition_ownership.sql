{#- Partition ownership across runs: one version per (source, group, topic, broker,
    partition) and owner, valid from the run that first saw it (dbt_valid_from,
    dbt_valid_from_run_id) to the run that saw another owner or none (dbt_valid_to,
    dbt_valid_to_run_id; null while current). -#}
{% snapshot snap_partition_ownership %}
{{
    config(
        unique_key='partition_key',
        strategy='check',
        check_cols=['owner'],
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
    owner,
    {#- the runs that open and close a version (the MERGE sets the closing one: macros/iceberg.sql) -#}
    {{ kaudit_run_id() }} as dbt_valid_from_run_id,
    cast(null as string) as dbt_valid_to_run_id
from {{ ref('int_partition_ownership') }}
{% endsnapshot %}
