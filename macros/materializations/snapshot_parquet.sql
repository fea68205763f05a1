{#- Snapshots (dbt's SCD2 history) on plain Parquet: an append-only log of versions.

    Why a project `snapshot` materialization at all: dbt-spark's own needs MERGE INTO (Delta,
    Iceberg or Hudi; their jars do not exist for the embedded Spark 4 session), and dbt-core
    requires every snapshot node to be `materialized: snapshot` (SnapshotConfig.validate), so
    a snapshot cannot name another materialization. The `snapshot` below is therefore only a
    switch: `file_format: parquet` goes to `kaudit_snapshot_parquet`; delta/iceberg/hudi go to
    dbt-spark's own `materialization_snapshot_spark`, unchanged.

    Layout. The versions live in an EXTERNAL Parquet table `<schema>.<snapshot>__log` at
    `<warehouse>/<location_root>/<snapshot>/`, partitioned by `run_id` (the run that WROTE the rows). A
    build of run R writes only `run_id=R/`:
      - every version R opens (insert: dbt_valid_to null, dbt_valid_from_run_id = R), and
      - a closed copy of every version R closes (an update or a hard delete: the version as it
        was, with dbt_valid_to and dbt_valid_to_run_id = R set).
    Nothing else is rewritten: the write is exactly the change. A closed version therefore has
    two copies (its open copy under its opening run, its closed copy under the closing run);
    the history is, per dbt_scd_id, the closed copy if there is one, else the open copy
    (`kaudit_snapshot_history_sql`). A version is closed at most once (only current versions
    are compared), so "closed copy first" is the whole rule; it does not depend on the order
    of run ids. That history is the view `<schema>.<snapshot>` with the snapshot's columns.

    Each build, in order (none depends on the catalog surviving: a new process with an empty
    in-memory catalog finds the history the files hold):
    1. (re)declare the log table over its location with the snapshot's columns (described by
       `describe query`, nothing computed), unless the catalog already holds it declared so
       (`kaudit_run_table_declared`: a later build in the same process, or a metastore);
    2. empty R's own partition (`insert overwrite` of zero rows: a rebuild of R replaces R's
       rows; before R's first write it creates the location), then, when step 1 declared
       the table, `recover partitions`;
    3. (re)create the view `<schema>.<snapshot>` (the history) over the log; dbt's
       own staging rows against it (`snapshot_staging_table`: inserts, updates, hard deletes for
       the configured strategy and unique key; R's partition is empty, so this is the history
       of the runs before);
    4. `insert into` R's partition the new and the closed versions, computed from those
       staging rows (a CTE of the insert; one Spark job: its files
       appear together at commit; an interrupted build leaves R's partition empty, i.e. the
       history as it was before R, and running R again completes it).

    Besides dbt's columns (dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to) every
    version records the run that opened it and the run that closed it:
    `dbt_valid_from_run_id`, `dbt_valid_to_run_id` (null while current). -#}

{% materialization snapshot, adapter='spark' %}
    {%- set file_format = config.get('file_format') or 'parquet' -%}
    {%- if file_format == 'parquet' -%}
        {{ return(kaudit_snapshot_parquet()) }}
    {%- endif -%}
    {#- dbt-spark's own (internal packages are reachable as `dbt.`); it names the formats it takes -#}
    {{ return(dbt.materialization_snapshot_spark()) }}
{% endmaterialization %}


{% macro kaudit_snapshot_parquet() %}
    {%- set run_id = kaudit_required_run_id("snapshot " ~ model.name) -%}
    {%- if config.get('hard_deletes') == 'new_record' -%}
        {{ exceptions.raise_compiler_error(
            "snapshot " ~ model.name ~ ": hard_deletes 'new_record' is not supported on Parquet (use 'invalidate')") }}
    {%- endif -%}
    {%- set identifier = model.get('alias', model.get('name')) -%}
    {%- set location = kaudit_required_location(identifier) -%}
    {%- set target_relation = api.Relation.create(
            database=none, schema=model.schema, identifier=identifier, type='view') -%}
    {%- set log_relation = api.Relation.create(
            database=none, schema=model.schema, identifier=identifier ~ '__log', type='table') -%}
    {%- set meta = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}

    {{ run_hooks(pre_hooks) }}

    {%- set strategy_macro = strategy_dispatch(config.get('strategy')) -%}

    {#- 1. the log table over its location (the shape needs only the strategy's expressions) -#}
    {%- set shape_strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], False) -%}
    {%- set shape_sql -%}
        select
            *,
            cast(null as string) as dbt_valid_from_run_id,
            cast(null as string) as dbt_valid_to_run_id
        from ({{ build_snapshot_table(shape_strategy, model['compiled_code']) }}) as shaped
    {%- endset -%}
    {%- set columns = kaudit_describe_columns('query ' ~ shape_sql) -%}
    {%- set existing_log = adapter.get_relation(database=none, schema=model.schema, identifier=log_relation.identifier) -%}
    {%- set declare = not kaudit_run_table_declared(existing_log, columns, location) -%}
    {%- if declare -%}
        {%- do kaudit_declare_run_table(log_relation, columns, location) -%}
        {%- do adapter.cache_added(log_relation) -%}
    {%- endif -%}

    {#- 2. this run's partition emptied (a rebuild replaces it), the others found on disk -#}
    {%- call statement('empty_run') -%}
        insert overwrite table {{ log_relation }} partition (run_id = '{{ run_id }}')
        select
            {%- for name, type in columns %}
            cast(null as {{ type }}) as `{{ name }}`{{ ',' if not loop.last }}
            {%- endfor %}
        where false
    {%- endcall -%}
    {%- if declare -%}
        {%- call statement('recover_partitions') -%}
            alter table {{ log_relation }} recover partitions
        {%- endcall -%}
    {%- endif -%}

    {#- 3. the history as the snapshot's own name (a view: it shows this run's versions once
        they are written), then dbt's staging rows against the history of the runs before.
        dbt's strategies look the snapshot up in the adapter's cache: it must be there. -#}
    {%- set existing = adapter.get_relation(database=none, schema=model.schema, identifier=identifier) -%}
    {%- if existing is not none and not existing.is_view -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    {%- call statement('history_view') -%}
        create or replace view {{ target_relation }} as
        {{ kaudit_snapshot_history_sql(log_relation, columns, meta) }}
    {%- endcall -%}
    {%- do adapter.cache_added(target_relation) -%}
    {%- set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], True) -%}

    {#- 4. the change: new versions and closed copies, in this run's partition (the view reads
        the other runs' partitions: Spark appends to a table it reads, it cannot overwrite it) -#}
    {%- call statement('main') -%}
        insert into table {{ log_relation }} partition (run_id = '{{ run_id }}')
        with kaudit_staging as (
            {{ snapshot_staging_table(strategy, model['compiled_code'], target_relation) }}
        )

        select
            {%- for name, type in columns %}
            {%- if name == meta.dbt_valid_to %}
            closing.{{ meta.dbt_valid_to }}
            {%- elif name == 'dbt_valid_to_run_id' %}
            '{{ run_id }}'
            {%- else %}
            history.`{{ name }}`
            {%- endif %} as `{{ name }}`{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ target_relation }} as history
        inner join (
            select
                {{ meta.dbt_scd_id }},
                max({{ meta.dbt_valid_to }}) as {{ meta.dbt_valid_to }}
            from kaudit_staging
            where dbt_change_type in ('update', 'delete')
            group by {{ meta.dbt_scd_id }}
        ) as closing
            on history.{{ meta.dbt_scd_id }} = closing.{{ meta.dbt_scd_id }}
        where history.{{ meta.dbt_valid_to }} is null
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
        from kaudit_staging as staged
        where staged.dbt_change_type = 'insert'
    {%- endcall -%}

    {{ run_hooks(post_hooks) }}
    {%- do adapter.commit() -%}
    {{ return({'relations': [target_relation]}) }}
{% endmacro %}


{% macro kaudit_snapshot_history_sql(log_relation, columns, meta) -%}
    {#- One row per version: its closed copy if it has one, else its open copy. -#}
    select {{ kaudit_column_list(columns) }}
    from (
        select
            *,
            row_number() over (
                partition by {{ meta.dbt_scd_id }}
                order by {{ meta.dbt_valid_to }} is null, run_id desc
            ) as kaudit_copy
        from {{ log_relation }}
    ) as copies
    where kaudit_copy = 1
{%- endmacro %}
