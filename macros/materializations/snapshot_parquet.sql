{#- The `snapshot` materialization for Spark, extended to Parquet (rebuild-and-swap).

    dbt-spark's own snapshot needs MERGE INTO, i.e. Delta, Iceberg or Hudi tables; their jars
    are not available to the embedded session. For `file_format: parquet` (kaudit's default)
    this materialization keeps the history as an EXTERNAL Parquet table at
    `<location_root>/<snapshot>/` and, each run:

    1. declares the table over its location with the snapshot's columns (an empty or missing
       location is an empty history: the first run needs no special case, and a new process
       with an empty in-memory catalog finds the history the files hold);
    2. computes dbt's own staging rows (`snapshot_staging_table`: inserts, updates, hard
       deletes for the configured strategy and unique key);
    3. REBUILDS the whole history into a sibling `.<snapshot>__rebuild/` (old rows, closed
       where the staging says so; plus the new versions) - Spark cannot overwrite a path it
       reads from, so the rebuild is a separate copy;
    4. SWAPS it in: `insert overwrite` of the snapshot table from the rebuild. The rebuild copy
       stays until the next run: if a swap is ever interrupted, it is the complete history.

    Besides dbt's columns (dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to) every
    version records the run that opened it and the run that closed it:
    `dbt_valid_from_run_id`, `dbt_valid_to_run_id` (null while current).

    `file_format` delta/iceberg/hudi (a cluster with those jars): dbt-spark's native MERGE
    materialization runs unchanged. -#}

{% materialization snapshot, adapter='spark' %}
    {%- set file_format = config.get('file_format') or 'parquet' -%}
    {%- if file_format in ['delta', 'iceberg', 'hudi'] -%}
        {#- dbt-spark's own (internal packages are reachable as `dbt.`) -#}
        {{ return(dbt.materialization_snapshot_spark()) }}
    {%- elif file_format != 'parquet' -%}
        {{ exceptions.raise_compiler_error(
            "snapshot " ~ model.name ~ ": file_format " ~ file_format ~ " is not supported (parquet, delta, iceberg, hudi)") }}
    {%- endif -%}

    {%- set run_id = var('run_id', '') -%}
    {%- if not run_id -%}
        {{ exceptions.raise_compiler_error("snapshot " ~ model.name ~ ": var run_id is not set") }}
    {%- endif -%}
    {%- set identifier = model.get('alias', model.get('name')) -%}
    {%- set location = kaudit_required_location(identifier) -%}
    {%- set rebuild_location = config.get('location_root') ~ '/.' ~ identifier ~ '__rebuild' -%}
    {%- set target_relation = api.Relation.create(
            database=none, schema=model.schema, identifier=identifier, type='table') -%}
    {%- set rebuild_relation = api.Relation.create(
            database=none, schema=model.schema, identifier=identifier ~ '__kaudit_rebuild', type='table') -%}
    {%- set shape_view = identifier ~ '__kaudit_shape' -%}
    {%- set staging_view = identifier ~ '__kaudit_staging' -%}
    {%- set meta = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}

    {{ run_hooks(pre_hooks) }}

    {%- set strategy_macro = strategy_dispatch(config.get('strategy')) -%}

    {#- 1. the table over its location (the shape needs only the strategy's expressions) -#}
    {%- set shape_strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], False) -%}
    {%- call statement('snapshot_shape') -%}
        create or replace temporary view `{{ shape_view }}` as
        select *,
            cast(null as string) as dbt_valid_from_run_id,
            cast(null as string) as dbt_valid_to_run_id
        from ({{ build_snapshot_table(shape_strategy, model['compiled_code']) }}) shaped
        where false
    {%- endcall -%}
    {%- set columns = kaudit_describe_columns('`' ~ shape_view ~ '`') -%}
    {%- for relation, path in [(target_relation, location), (rebuild_relation, rebuild_location)] -%}
        {%- call statement('declare_' ~ relation.identifier) -%}
            create table if not exists {{ relation }} ({{ kaudit_column_ddl(columns) }})
            using parquet
            location '{{ path }}'
        {%- endcall -%}
        {%- do adapter.cache_added(relation) -%}
    {%- endfor -%}
    {%- set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], True) -%}

    {#- 2. dbt's staging rows against the current history -#}
    {%- call statement('snapshot_staging') -%}
        create or replace temporary view `{{ staging_view }}` as
        {{ snapshot_staging_table(strategy, model['compiled_code'], target_relation) }}
    {%- endcall -%}

    {#- 3. rebuild -#}
    {%- set closing_columns = [meta.dbt_valid_to, 'dbt_valid_to_run_id'] -%}
    {%- call statement('snapshot_rebuild') -%}
        insert overwrite table {{ rebuild_relation }}
        select
            {%- for name, type in columns %}
            {%- if name == meta.dbt_valid_to %}
            case when closing.{{ meta.dbt_scd_id }} is not null
                 then closing.{{ meta.dbt_valid_to }} else history.{{ meta.dbt_valid_to }} end
            {%- elif name == 'dbt_valid_to_run_id' %}
            case when closing.{{ meta.dbt_scd_id }} is not null
                 then '{{ run_id }}' else history.dbt_valid_to_run_id end
            {%- else %}
            history.`{{ name }}`
            {%- endif %} as `{{ name }}`{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ target_relation }} as history
        left join (
            select {{ meta.dbt_scd_id }}, max({{ meta.dbt_valid_to }}) as {{ meta.dbt_valid_to }}
            from `{{ staging_view }}`
            where dbt_change_type in ('update', 'delete')
            group by {{ meta.dbt_scd_id }}
        ) as closing
            on history.{{ meta.dbt_scd_id }} = closing.{{ meta.dbt_scd_id }}
            and history.{{ meta.dbt_valid_to }} is null
        union all
        select
            {%- for name, type in columns %}
            {%- if name == 'dbt_valid_from_run_id' %}
            '{{ run_id }}'
            {%- elif name == 'dbt_valid_to_run_id' %}
            cast(null as string)
            {%- else %}
            staged.`{{ name }}`
            {%- endif %} as `{{ name }}`{{ ',' if not loop.last }}
            {%- endfor %}
        from `{{ staging_view }}` as staged
        where dbt_change_type = 'insert'
    {%- endcall -%}

    {#- 4. swap -#}
    {%- call statement('main') -%}
        insert overwrite table {{ target_relation }}
        select {{ kaudit_column_list(columns) }} from {{ rebuild_relation }}
    {%- endcall -%}
    {%- for view in [shape_view, staging_view] -%}
        {%- call statement('drop_' ~ view) -%}
            drop view if exists `{{ view }}`
        {%- endcall -%}
    {%- endfor -%}

    {{ run_hooks(post_hooks) }}
    {%- do adapter.commit() -%}
    {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
