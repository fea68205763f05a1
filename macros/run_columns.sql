{#- Columns every layer derives the same way. -#}

{% macro kaudit_run_id() -%}
    {#- The run being built, as a string literal (var run_id, set by the runner). -#}
    '{{ var("run_id") }}'
{%- endmacro %}


{% macro kaudit_partition_key() -%}
    {#- `source|group|topic|broker_id|partition`: a partition of a group as one string (the
        snapshots' unique key); broker_id is empty for the 0.8+ ZooKeeper layout and Kafka. -#}
    concat_ws('|', source, group_id, topic, coalesce(cast(broker_id as string), ''), cast(`partition` as string))
{%- endmacro %}
