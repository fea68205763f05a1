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
