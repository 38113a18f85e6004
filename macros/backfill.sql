{#- Backfill and replay window from the backfill_start / backfill_end vars.
    Fails before any write when the range is unusable. -#}
{% macro backfill_window() -%}
    {%- set start = var('backfill_start', none) -%}
    {%- set end = var('backfill_end', none) -%}
    {%- if start is none and end is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- if start is none or end is none -%}
        {{ exceptions.raise_compiler_error("Backfill needs both backfill_start and backfill_end (YYYY-MM-DD)") }}
    {%- endif -%}
    {%- set parsed = [] -%}
    {%- for name, value in [('backfill_start', start), ('backfill_end', end)] -%}
        {%- set day = calendar_date(value) -%}
        {%- if day is none -%}
            {{ exceptions.raise_compiler_error(name ~ " must be a date YYYY-MM-DD, got '" ~ value ~ "'") }}
        {%- endif -%}
        {%- do parsed.append(day) -%}
    {%- endfor -%}
    {%- if parsed[1] < parsed[0] -%}
        {{ exceptions.raise_compiler_error("backfill_end " ~ end ~ " is before backfill_start " ~ start) }}
    {%- endif -%}
    {%- if not var('backfill_reason', none) -%}
        {{ exceptions.raise_compiler_error("A backfill needs backfill_reason, e.g. --vars '{backfill_reason: \"partner resend\"}'") }}
    {%- endif -%}
    {{ return({'start': parsed[0] | string, 'end': parsed[1] | string, 'reason': var('backfill_reason'), 'mode': backfill_mode()}) }}
{%- endmacro %}

{#- The backfill_mode var, checked: backfill or replay. -#}
{% macro backfill_mode() -%}
    {%- set mode = var('backfill_mode') -%}
    {%- if mode not in ('backfill', 'replay') -%}
        {{ exceptions.raise_compiler_error("backfill_mode must be backfill or replay, got '" ~ mode ~ "'") }}
    {%- endif -%}
    {{ return(mode) }}
{%- endmacro %}

{#- `text` (YYYY-MM-DD) as a date, or none when no such day exists
    (2024-02-30, 2024-13-01). -#}
{% macro calendar_date(text) -%}
    {%- set match = modules.re.match('^([0-9]{4})-([0-9]{2})-([0-9]{2})$', text | string) -%}
    {%- if match is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set year, month, day = match.group(1) | int, match.group(2) | int, match.group(3) | int -%}
    {%- if year < 1 or month < 1 or month > 12 or day < 1 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set next_month = modules.datetime.date(year + month // 12, month % 12 + 1, 1) -%}
    {%- if day > (next_month - modules.datetime.timedelta(days=1)).day -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(modules.datetime.date(year, month, day)) }}
{%- endmacro %}

{#- Fails unless var as_of (when set) names a time that exists: a calendar
    date, a time of day (hours to 23, minutes and seconds to 59) and a UTC
    offset within +-18:00, which Spark reads as a timestamp. Spark reads an
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
    {%- set literal = as_of_ts() -%}
    {%- set parts = modules.re.match(
        '^([0-9-]+)(?:[T ](([0-9]{2}):([0-9]{2})(?::([0-9]{2})[.0-9]*)?)(Z|[+-]([0-9]{2}):?([0-9]{2})))?$',
        raw | string) -%}
    {%- set problem = none -%}
    {%- if calendar_date(parts.group(1)) is none -%}
        {%- set problem = parts.group(1) ~ ' is not a date' -%}
    {%- elif parts.group(2) and (parts.group(3) | int > 23 or parts.group(4) | int > 59 or (parts.group(5) or 0) | int > 59) -%}
        {%- set problem = parts.group(2) ~ ' is not a time of day' -%}
    {%- elif parts.group(7) and (parts.group(7) | int * 60 + parts.group(8) | int > 18 * 60 or parts.group(8) | int > 59) -%}
        {%- set problem = 'offset ' ~ parts.group(6) ~ ' is not between -18:00 and +18:00' -%}
    {%- elif run_query('select ' ~ literal ~ ' is null as unreadable').columns[0].values()[0] -%}
        {%- set problem = 'Spark cannot read it as a timestamp; write YYYY-MM-DDTHH:MM:SS+HH:MM' -%}
    {%- endif -%}
    {%- if problem -%}
        {{ exceptions.raise_compiler_error("as_of '" ~ raw ~ "': " ~ problem ~ " (e.g. 2024-02-01T00:00:00+00:00)") }}
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
        {{ sql_string(window.mode ~ ': ' ~ window.reason) }}
    {%- endif -%}
{%- endmacro %}

{#- SQL: the window's event dates as rows of `partition_value` (an expression
    of the date column `d`, e.g. a week start), reason the window's mode. -#}
{% macro backfill_window_partitions(partition_expr='d') -%}
    {%- set window = backfill_window() -%}
    select distinct
        {{ partition_expr }} as partition_value,
        {{ sql_string(window.mode) }} as reason,
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
