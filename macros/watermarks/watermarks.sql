{#- Tiered watermarks: the tiers are the `watermark_tiers` var; nothing else
    in the project repeats their numbers. -#}
{% macro watermark_tier_hours(tier_name) -%}
    {%- for tier in var('watermark_tiers') -%}
        {%- if tier['name'] == tier_name -%}
            {{ return(tier['lateness_hours']) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("Unknown watermark tier '" ~ tier_name ~ "'; tiers are set in the watermark_tiers var") }}
{%- endmacro %}

{% macro last_watermark_hours() -%}
    {{ return(var('watermark_tiers')[-1]['lateness_hours']) }}
{%- endmacro %}

{#- SQL: the tier an event of this lateness falls in, or 'beyond_watermark'. -#}
{% macro watermark_tier(lateness_seconds) -%}
    case
        {%- for tier in var('watermark_tiers') %}
            when {{ lateness_seconds }} <= {{ tier['lateness_hours'] * 3600 }} then '{{ tier["name"] }}'
        {%- endfor %}
        else 'beyond_watermark'
    end
{%- endmacro %}

{#- SQL: live / preliminary / final of an event-date partition, judged at `as_of`. -#}
{% macro partition_status(event_date, as_of) -%}
    {%- set live_hours = watermark_tier_hours(var('live_until_tier')) -%}
    {%- set preliminary_hours = watermark_tier_hours(var('preliminary_until_tier')) -%}
    case
        when {{ as_of }} < cast(date_add({{ event_date }}, 1) as timestamp) + make_dt_interval(0, {{ live_hours }}, 0, 0)
            then 'live'
        when {{ as_of }} < cast(date_add({{ event_date }}, 1) as timestamp) + make_dt_interval(0, {{ preliminary_hours }}, 0, 0)
            then 'preliminary'
        else 'final'
    end
{%- endmacro %}

{#- SQL: arrival_ts - event_ts in whole seconds, never negative (clock skew). -#}
{% macro lateness_seconds(arrival_ts, event_ts) -%}
    greatest(unix_timestamp({{ arrival_ts }}) - unix_timestamp({{ event_ts }}), 0)
{%- endmacro %}
