{#- Overrides dbt-spark's macro of the same name (root-project macros win).
    Before an append or a merge, the model's new rows are staged once
    (stage_rows), and when there are none the write is skipped: an empty
    MERGE or INSERT would still commit a new table version, and a run with
    nothing new must change no table.
    DDL goes through statement(): on Thrift it returns no result set. -#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- set nothing_reason = adapter.memo_get(writes_nothing_key()) if strategy in ('append', 'merge') else none -%}
    {%- if nothing_reason -%}
        {#- The model said, while rendering, that its query has no row this
            run (writes_nothing): not even staged or counted. -#}
        {{ log(model.name ~ ': ' ~ nothing_reason ~ ', ' ~ target ~ ' left unchanged', info=true) }}
        {%- do nothing_written(target) -%}
        select 'nothing new' as status
    {%- elif strategy in ('append', 'merge') -%}
        {#- A Python model's new rows are already a table (dbt writes __dbt_tmp). -#}
        {%- set source = source if model.language == 'python' else stage_rows(source) -%}
        {%- set new_rows = run_query('select count(*) from ' ~ source).columns[0].values()[0] -%}
        {%- if new_rows == 0 -%}
            {{ log(model.name ~ ': nothing new, ' ~ target ~ ' left unchanged', info=true) }}
            {%- do nothing_written(target) -%}
            select 'nothing new' as status
        {%- else -%}
            {{ log(model.name ~ ': ' ~ strategy ~ ' of ' ~ new_rows ~ ' row(s) into ' ~ target, info=true) }}
            {%- do record_written_partitions(target, source) -%}
            {%- if staged_model() -%}
                {#- on the run branch, published at the run's end -#}
                {%- do stage_for_publication(target) -%}
            {%- endif -%}
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


{#- Called from an incremental model's SQL when its query has no row this
    run by construction (e.g. a booking model under a setting that books
    nothing): its append or merge then runs no query at all, and its data
    tests pass without one (nothing_written). `reason` is logged. The
    late-arriving snapshot's staging says so too when its inputs are
    unchanged (macros/snapshots/late_arriving_snapshot.sql). -#}
{% macro writes_nothing(reason) -%}
    {%- if execute -%}
        {%- do adapter.memo_set(writes_nothing_key(), reason) -%}
    {%- endif -%}
{%- endmacro %}

{% macro writes_nothing_key() -%}
    {{ return('writes_nothing:' ~ model.unique_id) }}
{%- endmacro %}


{#- Stages the rows of one write, so that the count, the publication gate,
    the write and the change manifest read them instead of running the
    model's query again: `sql` (default: every row of `source`) is written
    once as Parquet files under the warehouse's _staging folder and read
    through the temporary view `view` (default: <source>__staged). A cached
    view would not do: Spark's MERGE rewrite never matches a cached plan, so
    the MERGE ran the whole query a second time. The folder is overwritten by
    the model's next write and holds no table. Returns the view's name. -#}
{% macro stage_rows(source, sql=none, view=none) %}
    {%- set staged = view or source.identifier ~ '__staged' -%}
    {%- set folder = staging_folder() ~ '/' ~ target.schema ~ '/' ~ staged -%}
    {%- call statement('stage_rows') -%}
        insert overwrite directory {{ sql_string(folder) }} using parquet
        {{ sql or 'select * from ' ~ source }}
    {%- endcall -%}
    {%- call statement('read_staged_rows') -%}
        create or replace temporary view {{ staged }} using parquet options (path {{ sql_string(folder) }})
    {%- endcall -%}
    {{ return(staged) }}
{% endmacro %}


{#- Whether the model being rendered may stage rows while it renders: in a
    `dbt build` or `dbt run` of the model, which holds the deployment's run
    lock (macros/run_lock.sql), so no other build stages meanwhile. Not in a
    unit test, nor in a command that takes no lock (compile, show, docs),
    which must not overwrite the staged rows of a build running meanwhile.
    The SQL such a build leaves under target/compiled reads the staged
    views, which last as long as its session; `dbt compile` writes SQL that
    stands alone. -#}
{% macro stages_while_rendering() %}
    {{ return(execute and model.resource_type == 'model' and flags.WHICH in ('build', 'run')) }}
{% endmacro %}


{#- A WITH list (`ctes`, without the `with`) whose CTE `name` the model's
    queries read more than once. Spark inlines a CTE at every reference, so
    each reference plans and runs everything `name` is derived from again.
    Where stages_while_rendering, `name`'s rows are staged once (stage_rows)
    and the list returned is `name` alone, reading them; elsewhere `ctes`
    unchanged. -#}
{% macro staged_cte(ctes, name) %}
    {%- if not stages_while_rendering() -%}
        {{ return(ctes) }}
    {%- endif -%}
    {%- set view = stage_rows(none, sql='with ' ~ ctes ~ ' select * from ' ~ name, view=this.identifier ~ '__' ~ name) -%}
    {{ return(name ~ ' as (select * from ' ~ view ~ ')') }}
{% endmacro %}


{#- Where staged rows go: <spark.sql.warehouse.dir>/_staging (read once per invocation). -#}
{% macro staging_folder() %}
    {%- set key = 'staging_folder:' ~ invocation_id -%}
    {%- if not adapter.memo_has(key) -%}
        {%- set warehouse = run_query('set spark.sql.warehouse.dir').rows[0][1] -%}
        {%- do adapter.memo_set(key, warehouse.rstrip('/') ~ '/_staging') -%}
    {%- endif -%}
    {{ return(adapter.memo_get(key)) }}
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
        ~ ' where ' ~ prune['source_column'] ~ ' is not null').columns[0].values() | list -%}
    {#- Partitions the model found its matches in besides (silver_events:
        rows its change log has not taken yet, macros/silver/change_capture.sql). -#}
    {%- set values = (values + (adapter.memo_get('merge_prune_extra:' ~ this) or [])) | unique | list -%}
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
