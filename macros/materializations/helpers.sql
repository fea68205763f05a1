{#- Shared helpers of kaudit's Parquet materializations. -#}

{% macro kaudit_describe_columns(relation_sql) -%}
    {#- [(name, spark type)] of a relation (a temp view name or a qualified table). -#}
    {%- set described = run_query('describe ' ~ relation_sql) -%}
    {%- set columns = [] -%}
    {%- for row in described.rows -%}
        {%- set name = row[0] | trim -%}
        {%- if not name or name.startswith('#') -%}{%- break -%}{%- endif -%}
        {%- do columns.append((name, row[1] | trim)) -%}
    {%- endfor -%}
    {{ return(columns) }}
{%- endmacro %}


{% macro kaudit_column_ddl(columns) -%}
    {%- for name, type in columns -%}
        `{{ name }}` {{ type }}{{ ', ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}


{% macro kaudit_column_list(columns, prefix='') -%}
    {%- for name, type in columns -%}
        {{ prefix }}`{{ name }}`{{ ', ' if not loop.last }}
    {%- endfor -%}
{%- endmacro %}


{% macro kaudit_required_location(identifier) -%}
    {%- set root = config.get('location_root') -%}
    {%- if not root or root.startswith('/marts') or root.startswith('/snapshots') -%}
        {{ exceptions.raise_compiler_error(
            "model " ~ identifier ~ ": no location_root (run through `kaudit build`, or pass --vars '{warehouse: /abs/path, run_id: ...}')") }}
    {%- endif -%}
    {{ return(root ~ '/' ~ identifier) }}
{%- endmacro %}


{% macro kaudit_required_run_id(what) -%}
    {#- var run_id (the run being built, set by the runner); a compile error naming `what`
        ("model <name>", "snapshot <name>") when it is not set. -#}
    {%- set run_id = var('run_id', '') -%}
    {%- if not run_id -%}
        {{ exceptions.raise_compiler_error(what ~ ": var run_id is not set") }}
    {%- endif -%}
    {{ return(run_id) }}
{%- endmacro %}


{% macro kaudit_declare_run_table(relation, columns, location) -%}
    {#- `relation` (re)declared as an EXTERNAL Parquet table over `location` with `columns` and
        the hive partition run_id (`drop table` of an external table keeps its files). -#}
    {%- call statement('kaudit_declare_run_table') -%}
        drop table if exists {{ relation }}
    {%- endcall -%}
    {%- call statement('kaudit_declare_run_table') -%}
        create table {{ relation }} ({{ kaudit_column_ddl(columns) }}, `run_id` string)
        using parquet
        partitioned by (run_id)
        location '{{ location }}'
    {%- endcall -%}
{%- endmacro %}
