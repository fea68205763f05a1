{#- Schema names and locations.

    Custom schemas are used as given (`kaudit_marts`, not `<target>_kaudit_marts`): analysts
    query `kaudit_marts.consumer_lag` whatever the profile. A schema is created with an
    explicit location under the warehouse (`<warehouse>/dbt/schemas/<schema>.db`), so neither
    the embedded session nor a fresh in-memory catalog writes `spark-warehouse/` into the cwd.
    A schema of another catalog (`kaudit.marts`: a namespace of the Iceberg catalog) is created
    there without one: its tables go where that catalog keeps them. -#}

{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}


{% macro kaudit_schema_location(schema) -%}
    {%- if kaudit_warehouse() -%}
        {{ kaudit_warehouse() }}/dbt/schemas/{{ schema }}.db
    {%- endif -%}
{%- endmacro %}


{% macro kaudit_create_schema_sql(schema) -%}
    create schema if not exists {{ schema }}
    {%- set location = kaudit_schema_location(schema) if '.' not in schema else '' %}
    {%- if location %} location '{{ location }}'{% endif %}
{%- endmacro %}


{% macro spark__create_schema(relation) -%}
    {%- call statement('create_schema') -%}
        {#- (a relation, or a schema's name: dbt-spark's snapshot passes the name) -#}
        {{ kaudit_create_schema_sql(relation if relation is string else relation.without_identifier().schema) }}
    {%- endcall -%}
{%- endmacro %}
