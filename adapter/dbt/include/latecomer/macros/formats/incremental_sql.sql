{#- Replaces dbt-spark's macro of the same name (this adapter's include folder
    comes before dbt-spark's, in every project on this adapter).
    Before an append or a merge, the model's new rows are spilled once
    (latecomer__spill_rows), and when there are none the write is skipped: an empty
    MERGE or INSERT would still commit a new table version, and a run with
    nothing new must change no table.
    DDL goes through statement(): on Thrift it returns no result set. -#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- set nothing_reason = latecomer__write_skipped() if strategy in ('append', 'merge') else none -%}
    {%- if nothing_reason -%}
        {#- The model said, while rendering, that its query has no row this
            run (latecomer__skip_write): not even spilled or counted. -#}
        {{ log(model.name ~ ': ' ~ nothing_reason ~ ', ' ~ target ~ ' left unchanged', info=true) }}
        {%- do latecomer__record_no_rows_written(target) -%}
        {{ latecomer__nothing_written_sql() }}
    {%- elif strategy in ('append', 'merge') -%}
        {#- A Python model's new rows are already a table (dbt writes __dbt_tmp). -#}
        {%- set source = source if model.language == 'python' else latecomer__spill_rows(source) -%}
        {%- set new_rows = run_query('select count(*) from ' ~ source).columns[0].values()[0] -%}
        {%- if new_rows == 0 -%}
            {%- if strategy == 'merge' -%}
                {#- The MERGE skipped would have failed on a key the table lacks. -#}
                {%- do latecomer__check_unique_key(target, unique_key) -%}
            {%- endif -%}
            {{ log(model.name ~ ': nothing new, ' ~ target ~ ' left unchanged', info=true) }}
            {%- do latecomer__record_no_rows_written(target) -%}
            {{ latecomer__nothing_written_sql() }}
        {%- else -%}
            {{ log(model.name ~ ': ' ~ strategy ~ ' of ' ~ new_rows ~ ' row(s) into ' ~ target, info=true) }}
            {%- do latecomer__record_written_partitions(target, source) -%}
            {%- if latecomer__staged_model() -%}
                {#- on the run branch, published at the run's end -#}
                {%- do latecomer__stage_for_publication(target) -%}
            {%- endif -%}
            {%- if strategy == 'append' -%}
                {{ get_insert_into_sql(source, target) }}
            {%- else -%}
                {{ get_merge_sql(target, source, unique_key, dest_columns=none,
                                 incremental_predicates=(incremental_predicates or []) + latecomer__merge_partition_predicates(source)) }}
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


{#- What dbt_spark_get_incremental_sql returns when there is nothing to
    write: the incremental materialization then runs no statement. -#}
{% macro latecomer__nothing_written_sql() -%}
    {{ return("select 'nothing new' as status") }}
{%- endmacro %}


{#- Fails, as the MERGE would, when a column of `unique_key` is not one of
    `relation`'s (a name, or a list of names; Spark compares names without
    case). The columns are the adapter's, kept for the invocation. -#}
{% macro latecomer__check_unique_key(relation, unique_key) %}
    {%- set keys = ([unique_key] if unique_key is string else unique_key or []) | map('lower') | list -%}
    {%- set columns = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
    {%- set missing = keys | reject('in', columns) | list -%}
    {%- if missing -%}
        {{ exceptions.raise_compiler_error(model.name ~ ': unique_key column(s) ' ~ missing | join(', ')
            ~ ' not found in ' ~ relation ~ ' (its columns: ' ~ columns | join(', ') ~ ')') }}
    {%- endif -%}
{% endmacro %}


{#- Called from an incremental model's SQL when its query has no row this
    run by construction (e.g. a booking model under a setting that books
    nothing): its append or merge then runs no query at all, and its data
    tests pass without one (latecomer__record_no_rows_written). `reason` is logged. -#}
{% macro latecomer__skip_write(reason) -%}
    {%- if execute -%}
        {%- do adapter.memo_set('skip_write:' ~ model.unique_id, reason) -%}
    {%- endif -%}
{%- endmacro %}

{#- latecomer__skip_write(reason) for the current incremental model when
    `relation` holds no row whose `columns` (a list, any of them) are past
    `high_water_mark`: a model whose batch starts from those rows then
    computes, spills and counts nothing. -#}
{% macro latecomer__skip_write_unless_newer(relation, columns, high_water_mark, reason) -%}
    {%- set newer = [] -%}
    {%- for column in columns -%}
        {%- do newer.append(column ~ ' > ' ~ high_water_mark) -%}
    {%- endfor -%}
    {%- if is_incremental() and not latecomer__any_rows('select 1 from ' ~ relation ~ ' where ' ~ newer | join(' or ')) -%}
        {%- do latecomer__skip_write(reason) -%}
    {%- endif -%}
{%- endmacro %}


{#- The reason latecomer__skip_write gave for the model being run, or none:
    its write then runs nothing (dbt_spark_get_incremental_sql, the
    late-arriving snapshot's merge). -#}
{% macro latecomer__write_skipped() -%}
    {{ return(adapter.memo_get('skip_write:' ~ model.unique_id)) }}
{%- endmacro %}


{#- Spills the rows of one write, so that the count, the publication gate,
    the write and the change manifest read them instead of running the
    model's query again: `sql` (default: every row of `source`) is written
    once as Parquet files under the warehouse's _spill folder and read
    through the temporary view `view` (default: <source>__spilled). A cached
    view would not do: Spark's MERGE rewrite never matches a cached plan, so
    the MERGE ran the whole query a second time. The folder is overwritten by
    the model's next write and holds no table. Returns the view's name. -#}
{% macro latecomer__spill_rows(source, sql=none, view=none) %}
    {%- set spilled = view or source.identifier ~ '__spilled' -%}
    {%- set folder = latecomer__spill_folder() ~ '/' ~ target.schema ~ '/' ~ spilled -%}
    {%- call statement('spill_rows') -%}
        insert overwrite directory {{ latecomer__sql_string(folder) }} using parquet
        {{ sql or 'select * from ' ~ source }}
    {%- endcall -%}
    {%- call statement('read_spilled_rows') -%}
        create or replace temporary view {{ spilled }} using parquet options (path {{ latecomer__sql_string(folder) }})
    {%- endcall -%}
    {{ return(spilled) }}
{% endmacro %}


{#- Whether the model being rendered may spill rows while it renders: in a
    `dbt build` or `dbt run` of the model, which holds the deployment's run
    lock (macros/run_lock.sql), so no other build spills meanwhile. Not in a
    unit test, nor in a command that takes no lock (compile, show, docs),
    which must not overwrite the spilled rows of a build running meanwhile.
    The SQL such a build leaves under target/compiled reads the spilled
    views, which last as long as its session; `dbt compile` writes SQL that
    stands alone. -#}
{% macro latecomer__spills_while_rendering() %}
    {{ return(execute and model.resource_type == 'model' and flags.WHICH in ('build', 'run')) }}
{% endmacro %}


{#- A WITH list (`ctes`, without the `with`) whose CTE `name` the model's
    queries read more than once. Spark inlines a CTE at every reference, so
    each reference plans and runs everything `name` is derived from again.
    Where latecomer__spills_while_rendering, `name`'s rows are spilled once (latecomer__spill_rows)
    and the list returned is `name` alone, reading them; elsewhere `ctes`
    unchanged. -#}
{% macro latecomer__spilled_cte(ctes, name) %}
    {%- if not latecomer__spills_while_rendering() -%}
        {{ return(ctes) }}
    {%- endif -%}
    {%- set view = latecomer__spill_rows(none, sql='with ' ~ ctes ~ ' select * from ' ~ name, view=this.identifier ~ '__' ~ name) -%}
    {{ return(name ~ ' as (select * from ' ~ view ~ ')') }}
{% endmacro %}


{#- Where spilled rows go: <spark.sql.warehouse.dir>/_spill (read once per invocation). -#}
{% macro latecomer__spill_folder() %}
    {%- set key = 'spill_folder:' ~ invocation_id -%}
    {%- if not adapter.memo_has(key) -%}
        {%- set warehouse = run_query('set spark.sql.warehouse.dir').rows[0][1] -%}
        {%- do adapter.memo_set(key, warehouse.rstrip('/') ~ '/_spill') -%}
    {%- endif -%}
    {{ return(adapter.memo_get(key)) }}
{% endmacro %}


{#- Config merge_prune: {target_column: <partition column of the table>,
    source_column: <column of the new rows>[, type: date (default) | timestamp]
    [, unlogged: {column: <run time column of the table>, log: <table>}]}:
    the partition each new row's match lives in (for silver_events, a known
    key's previous_event_date). The MERGE then reads only those partitions of
    the table to find its matches, instead of all of them. A timestamp column
    is matched by the days its values fall on (pruned by the files' min/max
    statistics). With `unlogged`, also the partitions of stored rows that the
    table `log` (in the same schema) has not taken yet
    (latecomer__unlogged_partitions): such a row may carry its previous
    values over, so the source column no longer names where it lives.
    Returns a list of ON predicates. -#}
{% macro latecomer__merge_partition_predicates(source) %}
    {%- set prune = config.get('merge_prune') -%}
    {%- if not prune or not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set by_day = prune.get('type', 'date') == 'timestamp' -%}
    {%- set value_sql = 'to_date(' ~ prune['source_column'] ~ ')' if by_day else prune['source_column'] -%}
    {%- set values = run_query('select distinct cast(' ~ value_sql ~ ' as string) from ' ~ source
        ~ ' where ' ~ prune['source_column'] ~ ' is not null').columns[0].values() | list -%}
    {%- if prune.get('unlogged') -%}
        {%- set values = (values + latecomer__unlogged_partitions(prune['target_column'], prune['unlogged'])) | unique | list -%}
    {%- endif -%}
    {%- if values | length == 0 -%}
        {{ return(['false']) }}
    {%- endif -%}
    {%- set column = 'DBT_INTERNAL_DEST.' ~ prune['target_column'] -%}
    {%- set matches = [] -%}
    {%- for value in values -%}
        {%- if by_day -%}
            {%- do matches.append('(' ~ column ~ " >= cast(" ~ latecomer__sql_string(value) ~ " as timestamp) and "
                ~ column ~ " < cast(date_add(" ~ latecomer__sql_string(value) ~ ", 1) as timestamp))") -%}
        {%- else -%}
            {%- do matches.append(column ~ " = cast(" ~ latecomer__sql_string(value) ~ " as " ~ prune.get('type', 'date') ~ ")") -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(['(' ~ matches | join(' or ') ~ ')']) }}
{% endmacro %}

{#- The values of `partition_column` holding rows of this table changed after
    the table `unlogged.log` last took its changes: rows whose
    `unlogged.column` is later than that table's largest (every row when it
    does not exist yet). None after a clean run; Iceberg skips every file
    whose statistics end before the high-water mark. (silver_events: a run
    stopped between its MERGE and its change log's; the project's
    macros/silver/change_capture.sql.) -#}
{% macro latecomer__unlogged_partitions(partition_column, unlogged) %}
    {%- set log_table = adapter.get_relation(this.database, this.schema, unlogged['log']) -%}
    {%- set logged_until = latecomer__high_water_mark(unlogged['column'], log_table)
        if log_table is not none else latecomer__high_water_mark_floor() -%}
    {%- set values = run_query('select distinct cast(' ~ partition_column ~ ' as string) from ' ~ this
        ~ ' where ' ~ unlogged['column'] ~ ' > ' ~ logged_until).columns[0].values() | list -%}
    {%- if values -%}
        {{ log(model.name ~ ': rows of ' ~ values | length ~ ' partition(s) changed after ' ~ unlogged['log']
            ~ ' last took them; the MERGE reads them too', info=true) }}
    {%- endif -%}
    {{ return(values) }}
{% endmacro %}
