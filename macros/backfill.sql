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
        {%- if not modules.re.match('^\d{4}-\d{2}-\d{2}$', value | string) -%}
            {{ exceptions.raise_compiler_error(name ~ " must be a date YYYY-MM-DD, got '" ~ value ~ "'") }}
        {%- endif -%}
        {%- do parsed.append(modules.datetime.date.fromisoformat(value | string)) -%}
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
    {%- if window is none -%}
        false
    {%- else -%}
        ({{ date_expr }} between date'{{ window.start }}' and date'{{ window.end }}')
    {%- endif -%}
{%- endmacro %}
