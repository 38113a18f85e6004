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
        {{ return(relation_at_version(relation, version)) }}
    {%- elif as_of_time is not none -%}
        {{ return(relation_at_time(relation, as_of_time)) }}
    {%- elif invocation_id is not none and execute -%}
        {%- set entry = version_of_invocation(relation, invocation_id) -%}
        {%- if entry is none -%}
            {{ exceptions.raise_compiler_error(
                "No retained version of " ~ relation ~ " was written by dbt invocation " ~ invocation_id ~ ".") }}
        {%- endif -%}
        {{ return(relation_at_version(relation, entry.version)) }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{#- dbt run-operation gold_versions --args '{model: gold_daily_revenue, event_date: 2024-01-03}'

    Prints every published version of one partition's rows, oldest first: the
    table version id, when it became current, its operation, each row's values
    and the change of every measure since the previous version. Table versions
    that left the partition as it was (other partitions' changes, compaction)
    are not repeated. Any versioned model works: partition_column (default
    event_date) and partition_value (default event_date) name the partition. -#}
{% macro gold_versions(model='gold_daily_revenue', event_date=none, partition_column='event_date', partition_value=none) %}
    {%- set value = partition_value if partition_value is not none else event_date -%}
    {%- if value is none -%}
        {{ exceptions.raise_compiler_error("gold_versions needs a partition: --args '{model: gold_daily_revenue, event_date: 2024-01-03}'") }}
    {%- endif -%}
    {%- set relation = versioned_model_relation(model) -%}
    {%- set keys = model_unique_key(model) | reject('equalto', partition_column) | list -%}
    {%- set history = partition_versions(relation, partition_column, value | string, keys) -%}
    {{ log('gold_versions: ' ~ relation ~ ' where ' ~ partition_column ~ ' = ' ~ value ~ ': '
        ~ history.states | length ~ ' published version(s) of its rows among ' ~ history.table_versions
        ~ ' table version(s)', info=true) }}
    {%- for state in history.states -%}
        {%- set is_first_state = loop.first -%}
        {{ log('version ' ~ state.version ~ '  current from ' ~ state.committed_at ~ ' UTC  ' ~ state.operation
            ~ ('' if loop.first else '  (changes since version ' ~ history.states[loop.index0 - 1].version ~ ')'), info=true) }}
        {%- if state.rows | length == 0 -%}
            {{ log('    no rows', info=true) }}
        {%- endif -%}
        {%- for row in state.rows -%}
            {%- set parts = [] -%}
            {%- for key in history['keys'] -%}
                {%- do parts.append(key ~ '=' ~ row[key]) -%}
            {%- endfor -%}
            {%- if row.is_removed -%}
                {%- do parts.append('removed') -%}
            {%- else -%}
                {%- for measure in history.measures -%}
                    {%- set delta = row[measure ~ '__delta'] -%}
                    {%- do parts.append(measure ~ '=' ~ row[measure] ~ (' (' ~ delta ~ ')' if delta is not none else '')) -%}
                {%- endfor -%}
                {%- for extra in history.extras -%}
                    {%- do parts.append(('row_version' if extra == 'version' else extra) ~ '=' ~ row[extra]) -%}
                {%- endfor -%}
                {%- if row.is_new and not is_first_state -%}
                    {%- do parts.append('(new)') -%}
                {%- endif -%}
            {%- endif -%}
            {{ log('    ' ~ parts | join('  '), info=true) }}
        {%- endfor -%}
    {%- endfor -%}
{% endmacro %}

{#- unique_key of a model as a list. -#}
{% macro model_unique_key(model_name) -%}
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
    numeric columns other than keys and `version`. -#}
{% macro partition_versions(relation, partition_column, partition_value, keys=[]) -%}
    {%- set versions = table_versions(relation) -%}
    {%- set columns = adapter.get_columns_in_relation(relation) -%}
    {%- set names = columns | map(attribute='name') | map('lower') | list -%}
    {%- if partition_column | lower not in names -%}
        {{ exceptions.raise_compiler_error(relation ~ " has no column " ~ partition_column ~ ".") }}
    {%- endif -%}
    {%- set measures = [] -%}
    {%- for column in columns -%}
        {%- set name = column.name | lower -%}
        {%- if modules.re.match('^(tinyint|smallint|int|integer|bigint|long|float|double|decimal)', column.dtype | lower)
            and name not in keys and name != partition_column | lower and name != 'version' -%}
            {%- do measures.append(name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set extras = [] -%}
    {%- for extra in ['status', 'version', 'restatement_reason', 'invocation_id'] if extra in names -%}
        {%- do extras.append(extra) -%}
    {%- endfor -%}
    {%- set where = partition_column ~ ' = ' ~ sql_string(partition_value) -%}
    {%- set ids = versions | map(attribute='version') | unique | list -%}
    {%- if ids | length == 0 -%}
        {{ return({'states': [], 'keys': keys, 'measures': measures, 'extras': extras, 'table_versions': 0}) }}
    {%- endif -%}

    {#- 1. a fingerprint of the partition's rows in every version -#}
    {%- set sql -%}
        {%- for id in ids %}
            select
                '{{ id }}' as version,
                case when count(*) = 0 then 'empty'
                    else sha2(concat_ws('|', sort_array(collect_list(to_json(struct(*))))), 256) end as fingerprint
            from {{ relation_at_version(relation, id) }}
            where {{ where }}
            {% if not loop.last %}union all{% endif %}
        {%- endfor %}
    {%- endset -%}
    {%- set fingerprints = {} -%}
    {%- for row in run_query(sql).rows -%}
        {%- do fingerprints.update({row['version']: row['fingerprint']}) -%}
    {%- endfor -%}
    {%- set kept = [] -%}
    {%- set previous = ['empty'] -%}
    {%- for entry in versions -%}
        {%- if fingerprints[entry.version] != previous[-1] -%}
            {%- do kept.append(entry) -%}
            {%- do previous.append(fingerprints[entry.version]) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if kept | length == 0 -%}
        {{ return({'states': [], 'keys': keys, 'measures': measures, 'extras': extras, 'table_versions': versions | length}) }}
    {%- endif -%}

    {#- 2. rows of the kept states, each paired with the previous state's row -#}
    {%- set sql -%}
        with states as (
            {%- for entry in kept %}
                select
                    {{ loop.index0 }} as state_rank,
                    {%- for column in keys + measures + extras %}
                        {{ column }},
                    {%- endfor %}
                    true as is_present
                from {{ relation_at_version(relation, entry.version) }}
                where {{ where }}
                {% if not loop.last %}union all{% endif %}
            {%- endfor %}
        )

        select
            coalesce(current_state.state_rank, previous_state.state_rank + 1) as state_rank,
            {%- for key in keys %}
                cast(coalesce(current_state.{{ key }}, previous_state.{{ key }}) as string) as {{ key }},
            {%- endfor %}
            {%- for measure in measures %}
                cast(current_state.{{ measure }} as string) as {{ measure }},
                case
                    when current_state.{{ measure }} - previous_state.{{ measure }} > 0
                        then concat('+', cast(current_state.{{ measure }} - previous_state.{{ measure }} as string))
                    else cast(current_state.{{ measure }} - previous_state.{{ measure }} as string)
                end as {{ measure }}__delta,
                current_state.{{ measure }} <=> previous_state.{{ measure }} as {{ measure }}__same,
            {%- endfor %}
            {%- for extra in extras %}
                cast(current_state.{{ extra }} as string) as {{ extra }},
            {%- endfor %}
            previous_state.is_present is null as is_new,
            current_state.is_present is null as is_removed
        from states as current_state
        full outer join states as previous_state
            on
                previous_state.state_rank = current_state.state_rank - 1
                {%- for key in keys %}
                    and current_state.{{ key }} <=> previous_state.{{ key }}
                {%- endfor %}
        where coalesce(current_state.state_rank, previous_state.state_rank + 1) < {{ kept | length }}
        order by 1{% for key in keys %}, {{ loop.index + 1 }}{% endfor %}
    {%- endset -%}
    {%- set rows_by_state = {} -%}
    {%- for row in run_query(sql).rows -%}
        {%- set values = {'is_new': row['is_new'], 'is_removed': row['is_removed']} -%}
        {%- for column in keys + extras -%}
            {%- do values.update({column: row[column]}) -%}
        {%- endfor -%}
        {%- for measure in measures -%}
            {%- do values.update({
                measure: row[measure],
                measure ~ '__delta': none if row[measure ~ '__same'] else row[measure ~ '__delta'],
            }) -%}
        {%- endfor -%}
        {%- do rows_by_state.setdefault(row['state_rank'] | int, []).append(values) -%}
    {%- endfor -%}
    {%- set states = [] -%}
    {%- for entry in kept -%}
        {%- do states.append({
            'version': entry.version,
            'committed_at': entry.committed_at,
            'operation': entry.operation,
            'rows': rows_by_state.get(loop.index0, []),
        }) -%}
    {%- endfor -%}
    {{ return({'states': states, 'keys': keys, 'measures': measures, 'extras': extras, 'table_versions': versions | length}) }}
{%- endmacro %}
