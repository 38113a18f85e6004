{#- Tiered watermarks: the tiers are the `watermark_tiers` var, and a source
    may override a tier's lateness_hours or alert_share with the
    `source_watermarks` var; nothing else in the project repeats their numbers. -#}

{#- The tiers of one source (none: the project's tiers), in order, each
    {name, lateness_hours, alert_share}. -#}
{% macro source_watermark_tiers(source_system=none) -%}
    {%- set overrides = (var('source_watermarks', {}) or {}).get(source_system, {}) if source_system else {} -%}
    {%- set tiers = [] -%}
    {%- for tier in var('watermark_tiers') -%}
        {%- set merged = {'name': tier['name'], 'lateness_hours': tier['lateness_hours'], 'alert_share': tier['alert_share']} -%}
        {%- do merged.update(overrides.get(tier['name'], {})) -%}
        {%- do tiers.append(merged) -%}
    {%- endfor -%}
    {{ return(tiers) }}
{%- endmacro %}

{#- Sources with overrides, checked: known tiers and keys, lateness rising
    from tier to tier. -#}
{% macro overridden_sources() -%}
    {%- set overrides = var('source_watermarks', {}) or {} -%}
    {%- set names = var('watermark_tiers') | map(attribute='name') | list -%}
    {%- for source_system, tiers in overrides.items() -%}
        {%- if source_system != source_system | lower | trim -%}
            {{ exceptions.raise_compiler_error("source_watermarks: source names are lower case, got '" ~ source_system ~ "'") }}
        {%- endif -%}
        {%- for name, settings in tiers.items() -%}
            {%- if name not in names -%}
                {{ exceptions.raise_compiler_error("source_watermarks." ~ source_system ~ ": unknown tier '" ~ name
                    ~ "'; tiers are " ~ names | join(', ')) }}
            {%- endif -%}
            {%- for key in settings if key not in ('lateness_hours', 'alert_share') -%}
                {{ exceptions.raise_compiler_error("source_watermarks." ~ source_system ~ "." ~ name
                    ~ ": unknown setting '" ~ key ~ "' (lateness_hours, alert_share)") }}
            {%- endfor -%}
        {%- endfor -%}
        {%- set hours = source_watermark_tiers(source_system) | map(attribute='lateness_hours') | list -%}
        {%- if hours != hours | sort -%}
            {{ exceptions.raise_compiler_error("source_watermarks." ~ source_system
                ~ ": lateness_hours must rise from tier to tier, got " ~ hours | join(', ')) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(overrides.keys() | list | sort) }}
{%- endmacro %}

{#- Whole seconds of a tier's lateness_hours (0.0833 h: 300 s). -#}
{% macro tier_seconds(tier) -%}
    {{ return((tier['lateness_hours'] * 3600) | round | int) }}
{%- endmacro %}

{#- Lateness in hours of a named tier of the project's tiers. -#}
{% macro watermark_tier_hours(tier_name) -%}
    {%- for tier in var('watermark_tiers') -%}
        {%- if tier['name'] == tier_name -%}
            {{ return(tier['lateness_hours']) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("Unknown watermark tier '" ~ tier_name ~ "'; tiers are set in the watermark_tiers var") }}
{%- endmacro %}

{#- The longest last tier of any source, in hours: how long versions are kept. -#}
{% macro last_watermark_hours() -%}
    {%- set hours = [var('watermark_tiers')[-1]['lateness_hours']] -%}
    {%- for source_system in overridden_sources() -%}
        {%- do hours.append(source_watermark_tiers(source_system)[-1]['lateness_hours']) -%}
    {%- endfor -%}
    {{ return(hours | max) }}
{%- endmacro %}

{#- SQL of one figure of the tiers (`what`: 'tier' for the CASE naming the
    tier of `lateness_seconds`, 'seconds' or 'alert_share' of `tier_name`,
    default the last tier), per source: the project's tiers, or a CASE on
    `source_column` when some sources override them. -#}
{% macro by_source_tiers(source_column, what, tier_name=none, lateness_seconds=none) -%}
    {%- set by_source = {} -%}
    {%- for source_system in overridden_sources() -%}
        {%- do by_source.update({source_system:
            tiers_figure(source_watermark_tiers(source_system), what, tier_name, lateness_seconds)}) -%}
    {%- endfor -%}
    {{ return(latecomer__source_case(source_column, by_source,
                          tiers_figure(source_watermark_tiers(), what, tier_name, lateness_seconds))) }}
{%- endmacro %}

{% macro tiers_figure(tiers, what, tier_name, lateness_seconds) -%}
    {%- if what == 'tier' -%}
        {%- set whens = [] -%}
        {%- for tier in tiers -%}
            {%- do whens.append('when ' ~ lateness_seconds ~ ' <= ' ~ tier_seconds(tier) ~ " then '" ~ tier['name'] ~ "'") -%}
        {%- endfor -%}
        {{ return("(case " ~ whens | join(' ') ~ " else 'beyond_watermark' end)") }}
    {%- endif -%}
    {%- set name = tier_name or tiers[-1]['name'] -%}
    {%- for tier in tiers if tier['name'] == name -%}
        {{ return(tier_seconds(tier) if what == 'seconds' else tier['alert_share']) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("Unknown watermark tier '" ~ tier_name ~ "'") }}
{%- endmacro %}

{#- SQL: the tier an event of this lateness falls in, or 'beyond_watermark',
    by its source's tiers. -#}
{% macro watermark_tier(lateness_seconds, source_column='source_system') -%}
    {{ return(by_source_tiers(source_column, 'tier', lateness_seconds=lateness_seconds)) }}
{%- endmacro %}

{#- SQL: seconds of `tier_name` (default: the last tier) for the row's source. -#}
{% macro watermark_seconds(source_column='source_system', tier_name=none) -%}
    {{ return(by_source_tiers(source_column, 'seconds', tier_name)) }}
{%- endmacro %}

{#- SQL: alert_share of `tier_name` for the row's source. -#}
{% macro watermark_alert_share(tier_name, source_column='source_system') -%}
    {{ return(by_source_tiers(source_column, 'alert_share', tier_name)) }}
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

{#- SQL: the last day of the period of `grain` (day, week, month, quarter,
    year) starting at `start_date`, the day a period's status is judged on. -#}
{% macro period_last_day(grain, start_date) -%}
    {%- set months = {'month': 0, 'quarter': 2, 'year': 11} -%}
    {%- if grain == 'day' -%}
        {{ start_date }}
    {%- elif grain == 'week' -%}
        date_add({{ start_date }}, 6)
    {%- elif grain in months -%}
        last_day(add_months({{ start_date }}, {{ months[grain] }}))
    {%- else -%}
        {{ exceptions.raise_compiler_error("period_last_day: unknown grain '" ~ grain ~ "' (day, week, month, quarter or year)") }}
    {%- endif -%}
{%- endmacro %}

{#- SQL: arrival_ts - event_ts in whole seconds, never negative (clock skew). -#}
{% macro lateness_seconds(arrival_ts, event_ts) -%}
    greatest(unix_timestamp({{ arrival_ts }}) - unix_timestamp({{ event_ts }}), 0)
{%- endmacro %}
