{#- Processing time. `as_of` is business time (status, restated_on, first seen);
    `run_ts` is the wall-clock start of the invocation, a monotonic marker that
    high-water marks compare against, so replays with an old as_of stay exact. -#}
{% macro as_of_ts() -%}
    {%- set raw = var('as_of', none) -%}
    {%- if raw is none or raw | string | trim == '' -%}
        {{ return(run_ts()) }}
    {%- endif -%}
    {%- set pattern = '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?(Z|[+-][0-9]{2}:?[0-9]{2}))?$' -%}
    {%- if not modules.re.match(pattern, raw | string) -%}
        {{ exceptions.raise_compiler_error(
            "as_of must be ISO-8601 with a UTC offset (e.g. 2024-02-01T00:00:00+00:00), got '" ~ raw ~ "'") }}
    {%- endif -%}
    {{ return("cast('" ~ raw ~ "' as timestamp)") }}
{%- endmacro %}

{% macro run_ts() -%}
    {{ return("cast('" ~ run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "' as timestamp)") }}
{%- endmacro %}
