{#- Materialization `run_partitioned`: the marts' history-keeping Parquet tables.

    A mart is an EXTERNAL Parquet table at `<warehouse>/<location_root>/<model>/`, partitioned by `run_id`
    (`run_id=<id>/` hive dirs; the files hold no run_id column). A build writes only the run's
    own partition with `insert overwrite ... partition (run_id = '<id>')`, which replaces that
    one directory and keeps every other run's partition (history).

    Why not dbt-spark's `table`/`incremental`: `table` replaces the whole location (all runs),
    and both decide "exists?" from the catalog. The embedded session's catalog is in-memory
    (empty in every new process) while the Parquet files persist; a CTAS into the non-empty
    location then fails. Here nothing depends on the catalog surviving: a build (re)declares
    the table over its location with the model's columns (`drop table` of an external table
    keeps its files), overwrites the run's partition, then recovers the other partitions on
    disk into the catalog. With a persistent metastore (Thrift Server) the same steps simply
    refresh the definition. A build that finds the table already declared so in the catalog
    (a later build in the same process, or a metastore) only overwrites the run's partition:
    that registers it, and the catalog already holds the others (`kaudit_run_table_declared`).

    The model's SQL is analysed by Spark for its columns once (`describe query`, which also
    serves the contract check: `kaudit_assert_contract`), then run by the insert itself. -#}

{% materialization run_partitioned, adapter='spark' %}
    {%- set run_id = kaudit_required_run_id("model " ~ model.name) -%}
    {%- set identifier = model['alias'] -%}
    {%- set location = kaudit_required_location(identifier) -%}
    {%- set target_relation = api.Relation.create(
            database=none, schema=model.schema, identifier=identifier, type='table') -%}
    {%- set existing = adapter.get_relation(database=none, schema=model.schema, identifier=identifier) -%}

    {{ run_hooks(pre_hooks) }}

    {#- the SQL's columns from Spark's analysis alone (`describe query`: no temp view, nothing
        computed); with an enforced contract (the model's yml columns and data_types) they must
        be exactly those columns with those types, else the build fails before anything is
        written -#}
    {%- set columns = kaudit_describe_columns('query ' ~ sql) -%}
    {%- if config.get('contract').enforced -%}
        {%- do kaudit_assert_contract(columns) -%}
    {%- endif -%}
    {%- set names = columns | map(attribute=0) | list -%}
    {%- if 'run_id' not in names -%}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ ": a run_partitioned model must select a run_id column") }}
    {%- endif -%}
    {%- set data_columns = columns | rejectattr(0, 'equalto', 'run_id') | list -%}

    {%- if existing is not none and existing.is_view -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- set declare = not kaudit_run_table_declared(existing, data_columns, location) -%}
    {%- if declare -%}
        {%- do kaudit_declare_run_table(target_relation, data_columns, location) -%}
    {%- endif -%}
    {%- call statement('main') -%}
        insert overwrite table {{ target_relation }} partition (run_id = '{{ run_id }}')
        select {{ kaudit_column_list(data_columns) }}
        from (
            {{ sql }}
        ) as kaudit_run
    {%- endcall -%}
    {#- after the insert: the location exists even on the first build -#}
    {%- if declare -%}
        {%- call statement('recover_partitions') -%}
            alter table {{ target_relation }} recover partitions
        {%- endcall -%}
    {%- endif -%}

    {{ run_hooks(post_hooks) }}
    {%- do adapter.commit() -%}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
