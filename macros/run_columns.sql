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


{% macro kaudit_warehouse() -%}
    {#- The warehouse's root directory: env var KAUDIT_WAREHOUSE, which the runner sets for its
        dbt invocation. Read only when executing, as the run: the saved parse holds nothing of
        the warehouse either, so one parse serves every warehouse (the one made at install). -#}
    {{ return(env_var('KAUDIT_WAREHOUSE', '') if execute else '') }}
{%- endmacro %}


{% macro kaudit_location_root() -%}
    {#- The model's `location_root` (relative: `marts`, `snapshots`, `dbt/intermediate`) under the
        warehouse; a compile error when KAUDIT_WAREHOUSE is not set. -#}
    {%- set warehouse = kaudit_warehouse() -%}
    {%- if not warehouse -%}
        {{ exceptions.raise_compiler_error(
            "model " ~ model.name ~ ": env var KAUDIT_WAREHOUSE is not set (run through `kaudit build`)") }}
    {%- endif -%}
    {{ return(warehouse ~ '/' ~ config.get('location_root')) }}
{%- endmacro %}


{% macro kaudit_partition_key() -%}
    {#- `source|group|topic|broker_id|partition`: a partition of a group as one string (the
        snapshots' unique key); broker_id is empty for the 0.8+ ZooKeeper layout and Kafka. -#}
    concat_ws('|', source, group_id, topic, coalesce(cast(broker_id as string), ''), cast(`partition` as string))
{%- endmacro %}
