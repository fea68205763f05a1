{#- dbt-spark's own materializations on the Iceberg catalog, with three changes of the SQL they
    emit:

    - the marts' `insert_overwrite` (dbt-spark's incremental, `partition_by: run_id`) first
      deletes the run's partition, then inserts the run's rows naming it:
      `insert overwrite <mart> partition (run_id = '<run>') select ...`. dbt-spark runs the
      insert in Spark's dynamic overwrite mode (it sets it for the session), which replaces only
      the partitions the select yields, even with the partition named: without the delete, a
      rebuild of a run that now yields no rows would keep the run's old rows. The delete of a
      whole partition is a metadata-only Iceberg commit. Both commits go to the build's branch
      (`spark.wap.branch`, profiles.yml): readers of `main` see neither until the runner
      publishes the build (pipelines/transform/dbt_runner.py). Other runs' rows are never
      touched. Before the delete the new rows' columns are checked against the model's enforced
      contract (dbt-spark checks a contract only when it creates the table: macros/contract.sql);
    - the snapshots' MERGE also records the run that closes a version (`dbt_valid_to_run_id`),
      in the same statement that sets its `dbt_valid_to`; the run that opens one is a column of
      the snapshot's select (`dbt_valid_from_run_id`, snapshots/*.sql);
    - the listing of a schema of the Iceberg catalog names it as dbt does (`kaudit.marts`). -#}

{% macro get_insert_overwrite_sql(source_relation, target_relation, existing_relation) %}
    {%- if config.get('partition_by') != ['run_id'] -%}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ ": insert_overwrite needs partition_by: [run_id]") }}
    {%- endif -%}
    {%- set dest_columns = adapter.get_columns_in_relation(target_relation) -%}
    {%- set run_id = kaudit_required_run_id("model " ~ model.name) -%}
    {%- if config.get('contract').enforced -%}
        {%- do kaudit_assert_contract(kaudit_describe_columns(source_relation)) -%}
    {%- endif -%}
    {%- call statement('kaudit_empty_run_partition') -%}
        delete from {{ target_relation }} where run_id = '{{ run_id }}'
    {%- endcall %}
    insert overwrite {{ target_relation }} partition (run_id = '{{ run_id }}')
    select {{ dest_columns | rejectattr('name', 'equalto', 'run_id') | map(attribute='quoted') | join(', ') }}
    from {{ source_relation }}
{% endmacro %}


{% macro spark__snapshot_merge_sql(target, source, insert_cols) -%}
    {%- set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() -%}
    {#- (the staging rows: a view with a name only, no catalog or schema) #}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source.identifier }} as DBT_INTERNAL_SOURCE
    on DBT_INTERNAL_SOURCE.{{ columns.dbt_scd_id }} = DBT_INTERNAL_DEST.{{ columns.dbt_scd_id }}
    when matched
    {%- if config.get("dbt_valid_to_current") %}
        and (DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} = {{ config.get('dbt_valid_to_current') }} or
             DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} is null)
    {%- else %}
        and DBT_INTERNAL_DEST.{{ columns.dbt_valid_to }} is null
    {%- endif %}
        and DBT_INTERNAL_SOURCE.dbt_change_type in ('update', 'delete')
        then update set
            {{ columns.dbt_valid_to }} = DBT_INTERNAL_SOURCE.{{ columns.dbt_valid_to }}
    {%- if 'dbt_valid_to_run_id' in insert_cols or '`dbt_valid_to_run_id`' in insert_cols %},
            dbt_valid_to_run_id = '{{ kaudit_required_run_id("snapshot " ~ model.name) }}'
    {%- endif %}
    when not matched
        and DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
        then insert *
{% endmacro %}


{% macro spark__list_relations_without_caching(relation) %}
    {#- dbt-spark's listing of a schema's relations, for a schema of another catalog too: Spark
        names a namespace of the Iceberg catalog without the catalog (`marts`), so the rows get
        the schema as dbt names it (`kaudit.marts`); else dbt would not find the marts and
        snapshots it built before, and would create them again. -#}
    {% call statement('list_relations_without_caching', fetch_result=True) -%}
        show table extended in {{ relation.schema }} like '*'
    {% endcall %}
    {%- set listed = load_result('list_relations_without_caching').table -%}
    {%- if '.' not in relation.schema -%}
        {% do return(listed) %}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- for row in listed.rows -%}
        {%- do rows.append([relation.schema, row[1], row[2], row[3]]) -%}
    {%- endfor -%}
    {% do return(rows) %}
{% endmacro %}
