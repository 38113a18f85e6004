{#- Overrides dbt-spark's macro of the same name (root-project macros win).
    Before an append or a merge, the model's new rows are cached once, and when
    there are none the write is skipped: an empty MERGE or INSERT would still
    commit a new table version, and a run with nothing new must change no table.

    The rows are cached through a second temporary view, <source>__cached, that
    keeps its analysed plan. Spark analyses dbt's __dbt_tmp view again at every
    use, an analysed CTE never matches the plan that was cached, and so the
    count, the gate and the write would each run the model's query again.
    DDL goes through statement(): on Thrift it returns no result set. -#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- if strategy in ('append', 'merge') -%}
        {%- set source = cache_new_rows(source) -%}
        {%- set new_rows = run_query('select count(*) from ' ~ source).columns[0].values()[0] -%}
        {%- if new_rows == 0 -%}
            {{ log(model.name ~ ': nothing new, ' ~ target ~ ' left unchanged', info=true) }}
            select 'nothing new' as status
        {%- else -%}
            {{ log(model.name ~ ': ' ~ strategy ~ ' of ' ~ new_rows ~ ' row(s) into ' ~ target, info=true) }}
            {%- if strategy == 'append' -%}
                {{ get_insert_into_sql(source, target) }}
            {%- else -%}
                {{ get_merge_sql(target, source, unique_key, dest_columns=none,
                                 incremental_predicates=(incremental_predicates or []) + merge_partition_predicates(source)) }}
            {%- endif -%}
        {%- endif -%}
    {%- else -%}
        {#- insert_overwrite and microbatch (the only other strategies dbt-spark accepts) -#}
        {%- if strategy == 'microbatch' and not config.get('partition_by') -%}
            {{ exceptions.raise_compiler_error("The microbatch strategy needs a partition_by config.") }}
        {%- endif -%}
        {{ get_insert_overwrite_sql(source, target, existing) }}
    {%- endif -%}
{% endmacro %}


{#- Caches rows for the steps of one write: `sql` (default: every row of
    `source`) as the temporary view `view` (default: <source>__cached), whose
    analysed plan is kept so that every later read hits the cache. Returns the
    view's name. -#}
{% macro cache_new_rows(source, sql=none, view=none) %}
    {%- set cached = view or source.identifier ~ '__cached' -%}
    {%- call statement('store_analysed_view_plans') -%}
        set spark.sql.legacy.storeAnalyzedPlanForView = true
    {%- endcall -%}
    {%- call statement('create_cached_view') -%}
        create or replace temporary view {{ cached }} as {{ sql or 'select * from ' ~ source }}
    {%- endcall -%}
    {%- call statement('reset_view_plans') -%}
        reset spark.sql.legacy.storeAnalyzedPlanForView
    {%- endcall -%}
    {%- do run_query('cache table ' ~ cached ~ " options ('storageLevel' 'MEMORY_AND_DISK')") -%}
    {{ return(cached) }}
{% endmacro %}


{#- Config merge_prune: {target_column: <partition column of the table>,
    source_column: <column of the new rows>[, type: date (default) | timestamp]}: the partition each new row's
    match lives in (for silver_events, a known key's previous_event_date).
    The MERGE then reads only those partitions of the table to find its
    matches, instead of all of them. A timestamp column is matched by the
    days its values fall on (pruned by the files' min/max statistics).
    Returns a list of ON predicates. -#}
{% macro merge_partition_predicates(source) %}
    {%- set prune = config.get('merge_prune') -%}
    {%- if not prune or not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set by_day = prune.get('type', 'date') == 'timestamp' -%}
    {%- set value_sql = 'to_date(' ~ prune['source_column'] ~ ')' if by_day else prune['source_column'] -%}
    {%- set values = run_query('select distinct cast(' ~ value_sql ~ ' as string) from ' ~ source
        ~ ' where ' ~ prune['source_column'] ~ ' is not null').columns[0].values() -%}
    {%- if values | length == 0 -%}
        {{ return(['false']) }}
    {%- endif -%}
    {%- set column = 'DBT_INTERNAL_DEST.' ~ prune['target_column'] -%}
    {%- set matches = [] -%}
    {%- for value in values -%}
        {%- if by_day -%}
            {%- do matches.append('(' ~ column ~ " >= cast(" ~ sql_string(value) ~ " as timestamp) and "
                ~ column ~ " < cast(date_add(" ~ sql_string(value) ~ ", 1) as timestamp))") -%}
        {%- else -%}
            {%- do matches.append(column ~ " = cast(" ~ sql_string(value) ~ " as " ~ prune.get('type', 'date') ~ ")") -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(['(' ~ matches | join(' or ') ~ ')']) }}
{% endmacro %}
