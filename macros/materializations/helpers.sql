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
    {%- if not config.get('location_root') -%}
        {{ exceptions.raise_compiler_error("model " ~ identifier ~ ": no location_root (dbt_project.yml)") }}
    {%- endif -%}
    {{ return(kaudit_location_root() ~ '/' ~ identifier) }}
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


{% macro kaudit_run_table_declared(existing, columns, location) -%}
    {#- True when `existing` (the catalog's relation, or none) is already the table
        `kaudit_declare_run_table` would declare: these columns, then the partition run_id, over
        `location`. Only then may a build skip the (re)declaration and `recover partitions`:
        the catalog then holds the table with every partition this catalog saw written. An
        in-memory catalog is empty in every new process, so a build there always declares the
        table and recovers the partitions other processes wrote. -#}
    {%- if existing is none or not existing.is_table -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set described = run_query('describe table extended ' ~ existing) -%}
    {%- set found = {'columns': [], 'partitions': [], 'location': none, 'provider': none} -%}
    {%- set section = ['columns'] -%}
    {%- for row in described.rows -%}
        {%- set name = (row[0] or '') | trim -%}
        {%- set value = (row[1] or '') | trim -%}
        {%- if name == '# Partition Information' -%}
            {%- do section.append('partitions') -%}
        {%- elif name.startswith('#') or not name -%}
            {%- if section[-1] != 'details' and name == '# Detailed Table Information' -%}
                {%- do section.append('details') -%}
            {%- elif section[-1] == 'columns' -%}
                {%- do section.append('other') -%}
            {%- endif -%}
        {%- elif section[-1] in ('columns', 'partitions') -%}
            {%- do found[section[-1]].append((name, value)) -%}
        {%- elif section[-1] == 'details' and name == 'Location' -%}
            {%- do found.update({'location': value}) -%}
        {%- elif section[-1] == 'details' and name == 'Provider' -%}
            {%- do found.update({'provider': value | lower}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(found['columns'] == (columns | list) + [('run_id', 'string')]
              and found['partitions'] == [('run_id', 'string')]
              and found['provider'] == 'parquet'
              and found['location'] in [location, 'file:' ~ location]) }}
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


{% macro spark__location_clause() -%}
    {#- dbt-spark's, with the warehouse and the run in the path: a `table` model (the
        intermediate ones) is written at `<warehouse>/<location_root>/run_id=<run>/<model>/`, one
        directory per run, so builds of different runs never share one. Both are known only when
        executing (`kaudit_location_root`, `kaudit_build_run`): the location is not part of the
        saved parse. An Iceberg table (the marts and snapshots on an Iceberg warehouse) has no
        location clause: its catalog places it. -#}
    {%- if config.get('location_root', validator=validation.any[basestring]) is not none
          and config.get('file_format') != 'iceberg' %}
    location '{{ kaudit_location_root() }}/run_id={{ kaudit_required_run_id("model " ~ model.name) }}/{{ model['alias'] }}'
    {%- endif %}
{%- endmacro %}
