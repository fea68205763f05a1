{#- on-run-start: make the run's raw and core tables `source()`-able.

    The runner passes them in env var KAUDIT_SOURCES (read when executing, like the run:
    `kaudit_build_run`), as JSON: {"<schema>.<table>": {"iceberg": <catalog table>, "snapshot":
    <snapshot id or null>, "exists": bool, "columns": [[name, spark type], ...]}} built from
    pipelines/warehouse/tables.py (the one declaration of those schemas). Each becomes a view of
    the run's rows of the catalog's table as of the snapshot the run's ledger recorded for it (a
    time-travel read: a later step of another run does not change what the build reads), its
    columns cast to the declared types. A table the run has no rows of (its extractor did not
    run) becomes an empty view with the same columns, so every mart is empty rather than the
    build failing. Plain SQL, so this works on the embedded session and on a Thrift Server alike. -#}

{% macro kaudit_register_sources() %}
    {%- set sources = fromjson(env_var('KAUDIT_SOURCES', '{}')) if execute else {} -%}
    {%- if sources -%}
        {%- set schemas = [] -%}
        {%- for name in sources.keys() | sort -%}
            {%- set schema = name.split('.')[0] -%}
            {%- if schema not in schemas -%}
                {%- do schemas.append(schema) -%}
                {%- do run_query(kaudit_create_schema_sql(schema)) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- for name in sources.keys() | sort -%}
            {%- set schema, identifier = name.split('.') -%}
            {%- set existing = adapter.get_relation(database=none, schema=schema, identifier=identifier) -%}
            {%- if existing is not none -%}
                {%- do adapter.drop_relation(existing) -%}
            {%- endif -%}
            {%- do run_query(kaudit_source_relation_sql(name, sources[name])) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}


{% macro kaudit_source_relation_sql(name, spec) -%}
    create view {{ name }} as
    select
        {%- for col in spec['columns'] %}
        {%- set value = '`' ~ col[0] ~ '`' if spec['exists'] else 'null' %}
        cast({{ value }} as {{ col[1] }}) as `{{ col[0] }}`{{ ',' if not loop.last }}
        {%- endfor %}
    {%- if spec['exists'] %}
    from {{ spec['iceberg'] }} version as of {{ spec['snapshot'] }}
    where run_id = {{ kaudit_run_id() }}
    {%- else %}
    where false
    {%- endif %}
{%- endmacro %}
