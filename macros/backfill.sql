{#- Backfill and replay window from the backfill_start / backfill_end vars,
    checked (python_jobs/core/run_vars.py): {start, end, reason, mode}, or
    none without a window. Fails before any write when the range is unusable. -#}
{% macro backfill_window() -%}
    {{ return(adapter.backfill_window(var('backfill_start', none), var('backfill_end', none),
                                      var('backfill_reason', none), var('backfill_mode'))) }}
{%- endmacro %}

{#- The backfill_mode var, checked: backfill or replay. -#}
{% macro backfill_mode() -%}
    {{ return(adapter.backfill_mode(var('backfill_mode'))) }}
{%- endmacro %}

{#- Fails unless var as_of (when set) names a time that exists
    (python_jobs/core/run_vars.py: a calendar date, a time of day, an offset
    within +-18:00) and Spark reads it as a timestamp. Spark reads an
    impossible time as null, which would judge every status at no time. -#}
{% macro validate_as_of() %}
    {%- set raw = as_of_given() -%}
    {%- set from_env = env_var('LATECOMER_AS_OF', '') | trim -%}
    {#- as_of_given prefers the var: it differs from a set variable only
        when both are given. -#}
    {%- if from_env and raw != from_env -%}
        {{ exceptions.raise_compiler_error("as_of is given twice: --vars as_of '" ~ raw
            ~ "' and LATECOMER_AS_OF '" ~ from_env ~ "'; give one") }}
    {%- endif -%}
    {%- if raw is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set problem = adapter.as_of_problem(raw) -%}
    {%- if not problem and run_query('select ' ~ as_of_ts() ~ ' is null as unreadable').columns[0].values()[0] -%}
        {%- set problem = "as_of '" ~ raw ~ "': Spark cannot read it as a timestamp; write YYYY-MM-DDTHH:MM:SS+HH:MM" -%}
    {%- endif -%}
    {%- if problem -%}
        {{ exceptions.raise_compiler_error(problem) }}
    {%- endif -%}
{% endmacro %}

{#- SQL: whether a date expression falls inside the backfill window (false without one). -#}
{% macro in_backfill_window(date_expr) -%}
    {%- set window = backfill_window() -%}
    {%- if not window -%}
        false
    {%- else -%}
        ({{ date_expr }} between date'{{ window.start }}' and date'{{ window.end }}')
    {%- endif -%}
{%- endmacro %}

{#- SQL string literal: "<mode>: <reason>" of the backfill window (null without one). -#}
{% macro backfill_reason_sql() -%}
    {%- set window = backfill_window() -%}
    {%- if not window -%}
        cast(null as string)
    {%- else -%}
        {{ latecomer__sql_string(window.mode ~ ': ' ~ window.reason) }}
    {%- endif -%}
{%- endmacro %}

{#- SQL: the window's event dates as rows of `partition_value` (an expression
    of the date column `d`, e.g. a week start), reason the window's mode. -#}
{% macro backfill_window_partitions(partition_expr='d') -%}
    {%- set window = backfill_window() -%}
    select distinct
        {{ partition_expr }} as partition_value,
        {{ latecomer__sql_string(window.mode) }} as reason,
        cast(null as timestamp) as changed_run_at
    from (select explode(sequence(date'{{ window.start }}', date'{{ window.end }}')) as d) as window_dates
{%- endmacro %}

{#- on-run-start: fail before any model runs when as_of or the backfill vars
    are unusable (the models would fail on them one by one, after some wrote,
    or run with statuses judged at no time). -#}
{% macro validate_run_vars() %}
    {%- if execute -%}
        {%- do validate_as_of() -%}
        {%- do backfill_mode() -%}
        {%- set window = backfill_window() -%}
        {%- if window -%}
            {{ log(window.mode ~ ' of event dates ' ~ window.start ~ ' to ' ~ window.end ~ ': ' ~ window.reason, info=true) }}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
