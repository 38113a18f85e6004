{#- Overrides dbt-spark's macro of the same name (root-project macros win).
    Before an append or a merge, the model's new rows are cached once, and when
    there are none the write is skipped: an empty MERGE or INSERT would still
    commit a new table version, and a run with nothing new must change no table.
    A merge into a published table passes the publication gate first.

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
            {%- if strategy == 'merge' and is_incremental() -%}
                {%- do publication_gate(source, target) -%}
            {%- endif -%}
            {{ log(model.name ~ ': ' ~ strategy ~ ' of ' ~ new_rows ~ ' row(s) into ' ~ target, info=true) }}
            {%- if strategy == 'append' -%}
                {{ get_insert_into_sql(source, target) }}
            {%- else -%}
                {{ get_merge_sql(target, source, unique_key, dest_columns=none, incremental_predicates=incremental_predicates) }}
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


{% macro cache_new_rows(source) %}
    {%- set cached = source.identifier ~ '__cached' -%}
    {%- call statement('store_analysed_view_plans') -%}
        set spark.sql.legacy.storeAnalyzedPlanForView = true
    {%- endcall -%}
    {%- call statement('create_cached_view') -%}
        create or replace temporary view {{ cached }} as select * from {{ source }}
    {%- endcall -%}
    {%- call statement('reset_view_plans') -%}
        reset spark.sql.legacy.storeAnalyzedPlanForView
    {%- endcall -%}
    {%- do run_query('cache table ' ~ cached ~ " options ('storageLevel' 'MEMORY_AND_DISK')") -%}
    {{ return(cached) }}
{% endmacro %}
