{#- Schema names.

    Custom schemas are used as given (`kaudit_staging`, `kaudit.marts`, not
    `<target>_kaudit_staging`): analysts query `kaudit.marts.consumer_lag` whatever the profile.
    The schemas of Spark's session catalog (`kaudit_raw`, `kaudit_staging`, ...) hold views only;
    a schema of the Iceberg catalog (`kaudit.marts`: a namespace) keeps its tables where that
    catalog keeps them. -#}

{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}


{% macro kaudit_create_schema_sql(schema) -%}
    create schema if not exists {{ schema }}
{%- endmacro %}


{% macro spark__create_schema(relation) -%}
    {%- call statement('create_schema') -%}
        {#- (a relation, or a schema's name: dbt-spark's snapshot passes the name) -#}
        {{ kaudit_create_schema_sql(relation if relation is string else relation.without_identifier().schema) }}
    {%- endcall -%}
{%- endmacro %}
