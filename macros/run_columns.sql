{#- Columns every layer derives the same way. -#}

{% macro kaudit_run_id() -%}
    {#- The run being built, as a string literal (`kaudit_build_run`). -#}
    '{{ kaudit_build_run() }}'
{%- endmacro %}


{% macro kaudit_build_run() -%}
    {#- The run being built: env var KAUDIT_RUN_ID, which the runner sets for its dbt invocation.
        Read only when executing (while parsing: ''), so the saved parse holds nothing of a run:
        every run reuses one parse. -#}
    {{ return(env_var('KAUDIT_RUN_ID', '') if execute else '') }}
{%- endmacro %}


{% macro kaudit_required_run_id(what) -%}
    {#- The run being built (`kaudit_build_run`); a compile error naming `what` ("model <name>",
        "snapshot <name>") when it is not set. -#}
    {%- set run_id = kaudit_build_run() -%}
    {%- if not run_id -%}
        {{ exceptions.raise_compiler_error(what ~ ": env var KAUDIT_RUN_ID is not set (run through `kaudit build`)") }}
    {%- endif -%}
    {{ return(run_id) }}
{%- endmacro %}


{% macro kaudit_partition_key() -%}
    {#- `source|group|topic|broker_id|partition`: a partition of a group as one string (the
        snapshots' unique key); broker_id is empty for the 0.8+ ZooKeeper layout and Kafka. -#}
    concat_ws('|', source, group_id, topic, coalesce(cast(broker_id as string), ''), cast(`partition` as string))
{%- endmacro %}
