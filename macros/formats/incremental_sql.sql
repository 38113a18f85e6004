{#- Overrides dbt-spark's macro of the same name (root-project macros win).
    Before an append or a merge, the model's new rows are cached once, and when
    there are none the write is skipped: an empty MERGE or INSERT would still
    commit a new table version, and a run with nothing new must change no table.
    A merge into a published table passes the publication gate first. -#}
{% macro dbt_spark_get_incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) %}
    {%- if strategy in ('append', 'merge') -%}
        {%- do run_query('cache table ' ~ source ~ " options ('storageLevel' 'MEMORY_AND_DISK')") -%}
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
