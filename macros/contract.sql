{#- The enforced contract of a mart, checked against the columns of the rows a build is about to
    write (dbt-spark checks a contract only when it creates the table; an incremental build of
    an existing mart is checked here: macros/iceberg.sql). -#}

{% macro kaudit_describe_columns(relation_sql) -%}
    {#- [(name, spark type)] of a relation (a temp view name or a qualified table). -#}
    {%- set described = run_query('describe ' ~ relation_sql) -%}
    {#- (the columns end at the first empty or `#` row: partitioning and details follow) -#}
    {%- set columns = [] -%}
    {%- set ended = [] -%}
    {%- for row in described.rows -%}
        {%- set name = row[0] | trim -%}
        {%- if not name or name.startswith('#') -%}
            {%- do ended.append(true) -%}
        {%- elif not ended -%}
            {%- do columns.append((name, row[1] | trim)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(columns) }}
{%- endmacro %}


{% macro kaudit_assert_contract(columns) -%}
    {#- dbt's contract check (`assert_columns_equivalent`: same rules, same ContractError) of
        the model's yml columns against `columns`, the SQL's columns as already described
        (`kaudit_describe_columns`): the model's SQL is analysed once, not once more for the
        check. The yml data_types are first taken as written; only when one is not exactly the
        type Spark describes are they normalised by Spark, as dbt does (`describe query` of
        dbt's empty-schema select: a yml `long` is the SQL's `bigint`). -#}
    {%- set user_defined_columns = model['columns'] -%}
    {%- if not user_defined_columns -%}
        {{ exceptions.raise_contract_error([], []) }}
    {%- endif -%}
    {%- set sql_columns = kaudit_format_columns(columns) -%}
    {%- set as_written = [] -%}
    {%- for key in user_defined_columns -%}
        {%- set col = user_defined_columns[key] -%}
        {%- do as_written.append((col['name'], (col.get('data_type') or '') | trim)) -%}
    {%- endfor -%}
    {%- if (as_written | sort) != (columns | list | sort) -%}
        {%- set yaml_columns = kaudit_format_columns(
                kaudit_describe_columns('query ' ~ get_empty_schema_sql(user_defined_columns))) -%}
        {%- if sql_columns | length != yaml_columns | length -%}
            {%- do exceptions.raise_contract_error(yaml_columns, sql_columns) -%}
        {%- endif -%}
        {%- for sql_col in sql_columns -%}
            {%- set yaml_col = yaml_columns | selectattr('name', 'equalto', sql_col['name']) | list -%}
            {%- if not yaml_col or sql_col['formatted'] != yaml_col[0]['formatted'] -%}
                {%- do exceptions.raise_contract_error(yaml_columns, sql_columns) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}


{% macro kaudit_format_columns(columns) -%}
    {#- [(name, type)] as dbt's `format_columns` gives them to its ContractError -#}
    {%- set formatted = [] -%}
    {%- for name, type in columns -%}
        {%- do formatted.append({'name': name, 'data_type': type, 'formatted': name | lower ~ ' ' ~ type}) -%}
    {%- endfor -%}
    {{ return(formatted) }}
{%- endmacro %}
