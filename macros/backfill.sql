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
        {%- set match = modules.re.match('^([0-9]{4})-([0-9]{2})-([0-9]{2})$', value | string) -%}
        {%- set valid = match is not none and 1 <= match.group(2) | int <= 12 and 1 <= match.group(3) | int -%}
        {%- if valid -%}
            {%- set year, month = match.group(1) | int, match.group(2) | int -%}
            {%- set next_month = modules.datetime.date(year + month // 12, month % 12 + 1, 1) -%}
            {%- set valid = match.group(3) | int <= (next_month - modules.datetime.timedelta(days=1)).day -%}
        {%- endif -%}
        {%- if not valid -%}
            {{ exceptions.raise_compiler_error(name ~ " must be a date YYYY-MM-DD, got '" ~ value ~ "'") }}
        {%- endif -%}
        {%- do parsed.append(modules.datetime.date(match.group(1) | int, match.group(2) | int, match.group(3) | int)) -%}
    {%- endfor -%}
    {%- if parsed[1] < parsed[0] -%}
        {{ exceptions.raise_compiler_error("backfill_end " ~ end ~ " is before backfill_start " ~ start) }}
    {%- endif -%}
    {%- if not var('backfill_reason', none) -%}
        {{ exceptions.raise_compiler_error("A backfill needs backfill_reason, e.g. --vars '{backfill_reason: \"partner resend\"}'") }}
    {%- endif -%}
    {%- if var('backfill_mode') not in ('backfill', 'replay') -%}
        {{ exceptions.raise_compiler_error("backfill_mode must be backfill or replay, got '" ~ var('backfill_mode') ~ "'") }}
    {%- endif -%}
    {{ return({'start': parsed[0] | string, 'end': parsed[1] | string, 'reason': var('backfill_reason'), 'mode': var('backfill_mode')}) }}
{%- endmacro %}

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
        '{{ window.mode }}' as reason,
        cast(null as timestamp) as changed_run_at
    from (select explode(sequence(date'{{ window.start }}', date'{{ window.end }}')) as d) as window_dates
{%- endmacro %}

{#- on-run-start: fail before any model runs when as_of or the backfill vars
    are unusable (the models would fail on them one by one, after some wrote). -#}
{% macro validate_run_vars() %}
    {%- if execute -%}
        {%- do as_of_ts() -%}
        {%- set window = backfill_window() -%}
        {%- if window -%}
            {{ log(window.mode ~ ' of event dates ' ~ window.start ~ ' to ' ~ window.end ~ ': ' ~ window.reason, info=true) }}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
