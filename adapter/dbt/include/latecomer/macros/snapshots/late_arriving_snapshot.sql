{#- The `late_arriving` snapshot strategy: SCD2 from a change log whose
    changes arrive late, out of order and more than once.

    The snapshot's query returns every change ever landed (not one row per key,
    as the stock strategies expect): unique_key, updated_at (when the change
    took effect), the tracked attributes (check_cols) and, optionally, a
    deletion flag (meta.deletion_flag). The history is a pure function of that
    set of changes, so it is the same whatever order the changes arrived in:

    - ties: of several changes of a key at the same updated_at, a deletion
      wins, then the greatest check_cols values in order (nulls lowest);
    - a version opens where the tracked attributes change and closes
      (valid_to) where the next different state starts, a deletion included;
      repeated changes with the same attributes do not open a version;
    - a deletion closes the open version and opens none; a later change
      re-opens the key.

    Each run recomputes the history and diffs it with what the snapshot
    holds (unless nothing landed since the last run: the adapter's snapshot
    materialization, materializations/snapshot.sql, then runs nothing): new
    versions are inserted (recorded_at / recorded_run_at), versions
    no longer in the history are kept but marked superseded (superseded_at /
    superseded_run_at, is_current false). Rows are never updated otherwise
    nor deleted, so the snapshot is bitemporal: the versions believed now are
    the rows with superseded_run_at null, and the rows recorded or superseded
    after a run say exactly which validity intervals changed since. Keys
    absent from the query keep their versions untouched. -#}

{% macro snapshot_late_arriving_strategy(node, snapshotted_rel, current_rel, model_config, target_exists) -%}
    {%- set unique_key = config.get('unique_key') -%}
    {%- set check_cols = config.get('check_cols') -%}
    {%- if unique_key is not string -%}
        {{ exceptions.raise_compiler_error(
            "The late_arriving snapshot strategy needs unique_key to be one column, got " ~ unique_key) }}
    {%- endif -%}
    {%- if not config.get('updated_at') -%}
        {{ exceptions.raise_compiler_error(
            "The late_arriving snapshot strategy needs updated_at: the column saying when a change took effect") }}
    {%- endif -%}
    {%- if check_cols is string or not check_cols -%}
        {{ exceptions.raise_compiler_error(
            "The late_arriving snapshot strategy needs check_cols: the list of tracked attribute columns") }}
    {%- endif -%}
    {{ return({
        'unique_key': unique_key,
        'updated_at': config.get('updated_at'),
        'check_cols': check_cols,
        'deletion_flag': (config.get('meta') or {}).get('deletion_flag'),
        'late_arriving': true,
        'row_changed': 'false',
        'scd_id': none,
        'hard_deletes': 'ignore',
        'invalidate_hard_deletes': false,
    }) }}
{%- endmacro %}

{#- SQL: the history of every key of `source_sql`, one row per version. -#}
{% macro latecomer__late_arriving_history(source_sql, strategy) -%}
    {%- set key = strategy.unique_key -%}
    {%- set cols = strategy.check_cols -%}
    {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
    with source_changes as (
        select
            {{ key }},
            {%- for col in cols %}
                {{ col }},
            {%- endfor %}
            cast({{ strategy.updated_at }} as timestamp) as scd2_changed_at,
            coalesce({{ strategy.deletion_flag or 'false' }}, false) as scd2_is_deletion
        from ({{ source_sql }}) as source_query
        where {{ key }} is not null and {{ strategy.updated_at }} is not null
    ),

    ranked_ties as (
        select
            *,
            row_number() over (
                partition by {{ key }}, scd2_changed_at
                order by scd2_is_deletion desc{% for col in cols %}, {{ col }} desc nulls last{% endfor %}
            ) as scd2_tie_rank
        from source_changes
    ),

    with_previous_state as (
        select
            *,
            {%- for col in cols %}
                lag({{ col }}) over by_time as scd2_previous_{{ loop.index }},
            {%- endfor %}
            lag(scd2_is_deletion) over by_time as scd2_previous_is_deletion
        from ranked_ties
        where scd2_tie_rank = 1
        window by_time as (partition by {{ key }} order by scd2_changed_at)
    ),

    state_changes as (
        select *
        from with_previous_state
        where
            scd2_previous_is_deletion is null
            or scd2_is_deletion != scd2_previous_is_deletion
            or (
                not scd2_is_deletion
                and not (
                    {%- for col in cols %}
                        {{ col }} <=> scd2_previous_{{ loop.index }}{% if not loop.last %} and{% endif %}
                    {%- endfor %}
                )
            )
    ),

    versions as (
        select
            *,
            lead(scd2_changed_at) over (partition by {{ key }} order by scd2_changed_at) as scd2_next_change_at
        from state_changes
    )

    select
        {{ key }},
        {%- for col in cols %}
            {{ col }},
        {%- endfor %}
        scd2_changed_at as {{ columns.dbt_valid_from }},
        scd2_next_change_at as {{ columns.dbt_valid_to }},
        scd2_next_change_at is null as is_current,
        sha2(to_json(array(
            cast({{ key }} as string),
            cast(scd2_changed_at as string),
            cast(scd2_next_change_at as string)
            {%- for col in cols %},
                cast({{ col }} as string)
            {%- endfor %}
        )), 256) as version_key
    from versions
    where not scd2_is_deletion
{%- endmacro %}

{#- SQL: history rows as first recorded by this run. -#}
{% macro latecomer__late_arriving_recorded(history_sql, strategy) -%}
    {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
    select
        history.*,
        sha2(concat_ws('|', history.version_key, cast({{ run_ts() }} as string)), 256) as {{ columns.dbt_scd_id }},
        {{ as_of_ts() }} as recorded_at,
        {{ run_ts() }} as recorded_run_at,
        cast(null as timestamp) as superseded_at,
        cast(null as timestamp) as superseded_run_at
    from ({{ history_sql }}) as history
{%- endmacro %}

{#- First run: the whole history. -#}
{% macro latecomer__build_snapshot_table(strategy, sql) -%}
    {%- if not strategy.get('late_arriving') -%}
        {{ return(default__build_snapshot_table(strategy, sql)) }}
    {%- endif -%}
    {{ return(latecomer__late_arriving_recorded(latecomer__late_arriving_history(sql, strategy), strategy)) }}
{%- endmacro %}

{#- Later runs: versions to insert ('insert') and versions no longer in the
    history ('supersede'), with the target's columns plus dbt_change_type. -#}
{% macro latecomer__snapshot_staging_table(strategy, source_sql, target_relation) -%}
    {%- if not strategy.get('late_arriving') -%}
        {{ return(default__snapshot_staging_table(strategy, source_sql, target_relation)) }}
    {%- endif -%}
    {%- set key = strategy.unique_key -%}
    {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
    {%- set value_columns = [key] + strategy.check_cols
        + [columns.dbt_valid_from, columns.dbt_valid_to, 'is_current', 'version_key', columns.dbt_scd_id,
           'recorded_at', 'recorded_run_at'] -%}
    {%- set staging -%}
    with believed as (
        select * from {{ target_relation }}
        where superseded_run_at is null
    ),

    history as (
        {{ latecomer__late_arriving_recorded(latecomer__late_arriving_history(source_sql, strategy), strategy) }}
    ),

    source_keys as (
        select distinct {{ key }}
        from ({{ source_sql }}) as source_query
        where {{ key }} is not null
    ),

    insertions as (
        select
            'insert' as dbt_change_type,
            {%- for column in value_columns %}
                history.{{ column }},
            {%- endfor %}
            history.superseded_at,
            history.superseded_run_at
        from history
        left anti join believed on history.version_key = believed.version_key
    ),

    supersessions as (
        select
            'supersede' as dbt_change_type,
            {%- for column in value_columns %}
                {%- if column == 'is_current' %}
                    false as is_current,
                {%- else %}
                    believed.{{ column }},
                {%- endif %}
            {%- endfor %}
            {{ as_of_ts() }} as superseded_at,
            {{ run_ts() }} as superseded_run_at
        from believed
        left semi join source_keys on believed.{{ key }} = source_keys.{{ key }}
        left anti join history on believed.version_key = history.version_key
    )

    select * from insertions
    union all
    select * from supersessions
    {%- endset -%}
    {{ return(staging) }}
{%- endmacro %}

{#- Apply the staging rows: insert new versions, mark superseded ones.
    The rows are spilled once (the history is computed once, not again by the
    MERGE); with none, nothing is written and the table gets no new version. -#}
{% macro latecomer__snapshot_merge_sql(target, source, insert_cols) -%}
    {%- if config.get('strategy') != 'late_arriving' -%}
        {{ return(spark__snapshot_merge_sql(target, source, insert_cols)) }}
    {%- endif -%}
    {%- set columns = config.get('snapshot_table_column_names') or get_snapshot_table_column_names() -%}
    {%- set spilled = latecomer__spill_rows(source) -%}
    {%- set changes = run_query('select count(*) from ' ~ spilled).columns[0].values()[0] -%}
    {%- if changes == 0 -%}
        {%- do latecomer__record_no_rows_written(target) -%}
        {{ return("select 'nothing to record' as late_arriving_snapshot") }}
    {%- endif -%}
    {%- set merge -%}
    merge into {{ target }} as dbt_internal_dest
    using {{ spilled }} as dbt_internal_source
        on dbt_internal_source.{{ columns.dbt_scd_id }} = dbt_internal_dest.{{ columns.dbt_scd_id }}
    when matched and dbt_internal_source.dbt_change_type = 'supersede' then update set
        superseded_at = dbt_internal_source.superseded_at,
        superseded_run_at = dbt_internal_source.superseded_run_at,
        is_current = false
    when not matched and dbt_internal_source.dbt_change_type = 'insert' then insert
        ({{ insert_cols | join(', ') }})
        values ({% for column in insert_cols %}dbt_internal_source.{{ column }}{% if not loop.last %}, {% endif %}{% endfor %})
    {%- endset -%}
    {{ return(merge) }}
{%- endmacro %}
