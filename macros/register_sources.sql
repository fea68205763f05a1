{#- on-run-start: make the run's raw and core partitions `source()`-able.

    The runner passes them in env var KAUDIT_SOURCES (read when executing, like the run:
    `kaudit_build_run`), as JSON: {"<schema>.<table>": {"path": <run partition dir>,
    "exists": bool, "columns": [[name, spark type], ...]}} built from pipelines/warehouse/tables.py (the
    one declaration of those schemas). Each becomes an external Parquet table over the partition
    dir, declared with those columns: Spark reads the files with that schema and never infers
    one (a view over `parquet.`<path>`` did, with a Spark job, each time a model, test or
    contract check resolved it: 550 jobs in the demo's two dbt builds). A partition that does
    not exist (its extractor did not run) becomes an empty view with the same columns, so every
    mart is empty rather than the build failing. Plain SQL, so this works on the embedded
    session and on a Thrift Server alike. -#}

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
    {%- if spec['exists'] and spec.get('iceberg') %}
    create view {{ name }} as
    select
        {%- for col in spec['columns'] %}
        cast(`{{ col[0] }}` as {{ col[1] }}) as `{{ col[0] }}`{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ spec['iceberg'] }} version as of {{ spec['snapshot'] }}
    where run_id = {{ kaudit_run_id() }}
    {%- elif spec['exists'] %}
    create table {{ name }} ({{ kaudit_column_ddl(spec['columns']) }})
    using parquet
    location '{{ spec['path'] }}'
    {%- else %}
    create view {{ name }} as
    select
        {%- for col in spec['columns'] %}
        cast(null as {{ col[1] }}) as `{{ col[0] }}`{{ ',' if not loop.last }}
        {%- endfor %}
    where false
    {%- endif %}
{%- endmacro %}
