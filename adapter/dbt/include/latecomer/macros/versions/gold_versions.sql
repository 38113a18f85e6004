{#- Published numbers as of earlier versions. -#}

{#- `from` fragment reading a model as of an earlier version, time or run, for
    ad-hoc SQL and analyses:
        select * from {{ gold_as_of('gold_daily_revenue', as_of_time='2024-01-22T00:00:00+00:00') }}
    At most one of as_of_time (UTC when no offset; the table as it was at that
    wall-clock time), version (a table version id) or invocation_id (the table
    as that dbt run left it; resolved when the query is compiled). None: the
    current table. -#}
{% macro gold_as_of(model_name, as_of_time=none, version=none, invocation_id=none) -%}
    {%- set relation = ref(model_name) -%}
    {%- set given = [as_of_time, version, invocation_id] | reject('none') | list -%}
    {%- if given | length > 1 -%}
        {{ exceptions.raise_compiler_error("gold_as_of takes at most one of as_of_time, version and invocation_id.") }}
    {%- endif -%}
    {%- if version is not none -%}
        {{ return(latecomer__relation_at_version(relation, version)) }}
    {%- elif as_of_time is not none -%}
        {{ return(latecomer__relation_at_time(relation, as_of_time)) }}
    {%- elif invocation_id is not none and execute -%}
        {%- set entry = latecomer__version_of_invocation(relation, invocation_id) -%}
        {%- if entry is none -%}
            {{ exceptions.raise_compiler_error(
                "No retained version of " ~ relation ~ " was written by dbt invocation " ~ invocation_id ~ ".") }}
        {%- endif -%}
        {{ return(latecomer__relation_at_version(relation, entry.version)) }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{#- dbt run-operation gold_versions --args '{model: gold_daily_revenue, event_date: 2024-01-03}'

    Prints every published version of one partition's rows, oldest first: the
    table version id, when it became current, its operation, each row's values
    and the change of every measure since the previous version. Table versions
    that left the partition as it was (other partitions' changes, compaction)
    are not repeated. Any versioned model works: latecomer__partition_column (default
    event_date) and partition_value (default event_date) name the partition.
    The lines are worded by python_jobs/core/versions/partitions.py
    (adapter.partition_history_report). -#}
{% macro gold_versions(model='gold_daily_revenue', event_date=none, partition_column='event_date', partition_value=none) %}
    {%- set value = partition_value if partition_value is not none else event_date -%}
    {%- if value is none -%}
        {{ exceptions.raise_compiler_error("gold_versions needs a partition: --args '{model: gold_daily_revenue, event_date: 2024-01-03}'") }}
    {%- endif -%}
    {%- set relation = latecomer__versioned_model_relation(model) -%}
    {%- set keys = latecomer__model_unique_key(model) | reject('equalto', partition_column) | list -%}
    {%- set history = latecomer__partition_versions(relation, partition_column, value | string, keys) -%}
    {%- for line in adapter.partition_history_report(relation | string, partition_column, value, history) -%}
        {{ log(line, info=true) }}
    {%- endfor -%}
{% endmacro %}

{#- unique_key of a model as a list. -#}
{% macro latecomer__model_unique_key(model_name) -%}
    {%- set nodes = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
        | selectattr('name', 'equalto', model_name | string) | list -%}
    {%- set unique_key = nodes[0].config.unique_key if nodes else none -%}
    {{ return([] if unique_key is none else ([unique_key] if unique_key is string else unique_key | list)) }}
{%- endmacro %}

{#- The published states of one partition across the table's versions.
    Returns {states, keys, measures, extras, table_versions}; each state is
    {version, committed_at, operation, rows}, a row maps keys, measures,
    `<measure>__delta` (signed change since the previous state, none when the
    row is new), extras (status, row_version, restatement_reason,
    invocation_id where present), is_new and is_removed. Measures are the
    numeric columns other than keys and `version`.

    The SQL fingerprints the partition in every version, then reads its rows
    in the versions where they changed; python_jobs/core/versions/partitions.py picks
    those versions (changed_versions), pairs each state's rows with the
    previous state's by key and computes the changes (partition_history). -#}
{% macro latecomer__partition_versions(relation, partition_column, partition_value, keys=[]) -%}
    {%- set versions = latecomer__table_versions(relation) -%}
    {%- set layout = adapter.partition_layout(relation | string, adapter.get_columns_in_relation(relation),
        partition_column, keys) -%}
    {%- if layout.error -%}{{ exceptions.raise_compiler_error(layout.error) }}{%- endif -%}
    {%- set columns = layout['keys'] + layout.measures + layout.extras -%}
    {%- set where = partition_column ~ ' = ' ~ latecomer__sql_string(partition_value) -%}
    {%- set ids = versions | map(attribute='version') | unique | list -%}
    {%- if ids | length == 0 -%}
        {{ return(adapter.partition_history(layout, [], none, 0)) }}
    {%- endif -%}

    {#- 1. a fingerprint of the partition's rows in every version -#}
    {%- set sql -%}
        {%- for id in ids %}
            select
                '{{ id }}' as version,
                case when count(*) = 0 then 'empty'
                    else sha2(concat_ws('|', sort_array(collect_list(to_json(struct(*))))), 256) end as fingerprint
            from {{ latecomer__relation_at_version(relation, id) }}
            where {{ where }}
            {% if not loop.last %}union all{% endif %}
        {%- endfor %}
    {%- endset -%}
    {%- set kept = adapter.changed_versions(versions, run_query(sql)) -%}
    {%- if kept | length == 0 -%}
        {{ return(adapter.partition_history(layout, [], none, versions | length)) }}
    {%- endif -%}

    {#- 2. the partition's rows in each kept state, as text -#}
    {%- set sql -%}
        {%- for entry in kept %}
            select
                {{ loop.index0 }} as state_rank
                {%- for column in columns %},
                cast({{ column }} as string) as {{ column }}
                {%- endfor %}
            from {{ latecomer__relation_at_version(relation, entry.version) }}
            where {{ where }}
            {% if not loop.last %}union all{% endif %}
        {%- endfor %}
    {%- endset -%}
    {{ return(adapter.partition_history(layout, kept, run_query(sql), versions | length)) }}
{%- endmacro %}
