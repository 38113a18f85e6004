{#- `column in ('a', 'b')`, or `false` for an empty list. With `type` (date,
    timestamp) the values are literals of that type, `column in (date'a', ...)`:
    a date column compared with strings is cast to string, and a filter on a
    cast column prunes no partition or file (the whole table is read). -#}
{% macro latecomer__in_list(column, values, type=none) -%}
    {#- A null value matches nothing. -#}
    {%- set values = values | reject('none') | list -%}
    {%- if values | length == 0 -%}
        false
    {%- else -%}
        {{ column }} in ({% for value in values %}{{ type or '' }}{{ latecomer__sql_string(value) }}{% if not loop.last %}, {% endif %}{% endfor %})
    {%- endif -%}
{%- endmacro %}

{#- The high-water mark before anything was taken: a SQL timestamp literal
    earlier than every run. -#}
{% macro latecomer__high_water_mark_floor() -%}
    {{ return("cast('1900-01-01' as timestamp)") }}
{%- endmacro %}

{#- Largest value of `column` in this model's table, as a SQL timestamp literal
    (latecomer__high_water_mark_floor() on a first or full-refresh run): a high-water mark. -#}
{% macro latecomer__high_water_mark(column, relation=none) -%}
    {%- set relation = relation or this -%}
    {%- if execute and is_incremental() and not latecomer__skips_unchanged_inputs() -%}
        {%- set value = run_query("select cast(max(" ~ column ~ ") as string) from " ~ relation).columns[0].values()[0] -%}
        {%- if value is not none -%}
            {{ return("cast('" ~ value ~ "' as timestamp)") }}
        {%- endif -%}
    {%- endif -%}
    {{ return(latecomer__high_water_mark_floor()) }}
{%- endmacro %}

{#- Whether the model being rendered, stored and not being rebuilt
    (is_incremental), will be left as it is because nothing it reads moved
    since its last evaluation: a restated model's step 0, or an incremental
    model's with skip_if_inputs_unchanged, each decided once per invocation.
    Its SQL then never runs, so the high-water marks it would start from are
    not queried. Only in a build or run of the model: `dbt compile` writes
    the SQL a run with something new would run. -#}
{% macro latecomer__skips_unchanged_inputs() -%}
    {%- if not latecomer__spills_while_rendering() or not is_incremental() -%}
        {{ return(false) }}
    {%- elif config.get('materialized') == 'restated' -%}
        {{ return(latecomer__restated_decision()['unchanged']) }}
    {%- elif config.get('skip_if_inputs_unchanged', false) -%}
        {{ return(latecomer__recomputed_decision()['unchanged']) }}
    {%- endif -%}
    {{ return(false) }}
{%- endmacro %}

{#- Whether the query `sql` returns a row (true while parsing, and in unit
    tests, whose refs are fixtures that only exist inside the test's query). -#}
{% macro latecomer__any_rows(sql) -%}
    {%- if not execute or model.resource_type != 'model' -%}
        {{ return(true) }}
    {%- endif -%}
    {{ return(run_query('select 1 from (' ~ sql ~ ') as probe limit 1').rows | length > 0) }}
{%- endmacro %}

{#- A Jinja string as a SQL string literal (quotes and backslashes escaped). -#}
{% macro latecomer__sql_string(value) -%}
    '{{ value | string | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}


{#- SQL: `default`, or a CASE on `source_column` that gives each source of
    `by_source` (source name -> SQL) its own value and the others `default`. -#}
{% macro latecomer__source_case(source_column, by_source, default) -%}
    {%- if not by_source -%}
        {{ return(default) }}
    {%- endif -%}
    {%- set branches = [] -%}
    {%- for source_system, value in by_source.items() | sort -%}
        {%- do branches.append('when ' ~ source_column ~ ' = ' ~ latecomer__sql_string(source_system) ~ ' then ' ~ value) -%}
    {%- endfor -%}
    {{ return('(case ' ~ branches | join(' ') ~ ' else ' ~ default ~ ' end)') }}
{%- endmacro %}
