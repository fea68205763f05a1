{#- on-run-start: make the run's raw and core partitions `source()`-able.

    The runner passes `kaudit_sources`: {"<schema>.<table>": {"path": <run partition dir>,
    "exists": bool, "columns": [[name, spark type], ...]}} built from pipelines/tables.py (the
    one declaration of those schemas). Each becomes a view over `parquet.`<path>`` selecting the
    declared columns; a partition that does not exist (its extractor did not run) becomes an
    empty view with the same columns, so every mart is empty rather than the build failing.
    Views are plain SQL, so this works on the embedded session and on a Thrift Server alike. -#}

{% macro kaudit_register_sources() %}
    {%- set sources = var('kaudit_sources', {}) -%}
    {%- if execute and sources -%}
        {%- set schemas = [] -%}
        {%- for name in sources.keys() | sort -%}
            {%- set schema = name.split('.')[0] -%}
            {%- if schema not in schemas -%}
                {%- do schemas.append(schema) -%}
                {%- do run_query(kaudit_create_schema_sql(schema)) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- for name in sources.keys() | sort -%}
            {%- do run_query(kaudit_source_view_sql(name, sources[name])) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}


{% macro kaudit_source_view_sql(name, spec) -%}
    create or replace view {{ name }} as
    {%- if spec['exists'] %}
    select
        {%- for col in spec['columns'] %}
        cast(`{{ col[0] }}` as {{ col[1] }}) as `{{ col[0] }}`{{ ',' if not loop.last }}
        {%- endfor %}
    from parquet.`{{ spec['path'] }}`
    {%- else %}
    select
        {%- for col in spec['columns'] %}
        cast(null as {{ col[1] }}) as `{{ col[0] }}`{{ ',' if not loop.last }}
        {%- endfor %}
    where false
    {%- endif %}
{%- endmacro %}
