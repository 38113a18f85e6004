{#- dbt run-operation suggest_watermarks [--args '{days: 28}']

    Prints, per source, the lateness observed over the last `days` arrival
    days of the ledger (percentiles), and for each watermark tier a suggested
    tolerance: the (1 - alert_share) quantile of the source's lateness, so that
    about alert_share of its events would arrive later than the tier, rounded
    up (5 minutes below an hour, whole hours below two days, whole days above)
    and never below the tier before it. Beside each suggestion: the share of
    events later than it; for the last tier, the share it would have
    quarantined, next to what the current tier quarantined. Ends with the
    suggestions as a source_watermarks var. Changes nothing. -#}
{% macro suggest_watermarks(days=28) %}
    {%- if not (days is number and days > 0) -%}
        {{ exceptions.raise_compiler_error("suggest_watermarks: days must be a positive number, got '" ~ days ~ "'") }}
    {%- endif -%}
    {%- set ledger = ref('silver_event_arrivals') -%}
    {%- set window -%}
        lateness_seconds is not null and parse_error is null
        and arrival_date > date_sub(to_date({{ as_of_ts() }}), {{ days | int }})
        and arrival_ts <= {{ as_of_ts() }}
    {%- endset -%}
    {%- set shown = [0.5, 0.9, 0.95, 0.99, 0.999] -%}
    {%- set tier_quantiles = [] -%}
    {%- for tier in var('watermark_tiers') -%}
        {%- do tier_quantiles.append(1 - tier['alert_share']) -%}
    {%- endfor -%}
    {%- set quantiles = shown + tier_quantiles -%}
    {%- set observed_sql -%}
        select
            source_system,
            events,
            max_seconds,
            {%- for quantile in quantiles %}
            cast(quantiles[{{ loop.index0 }}] as double) as q{{ loop.index0 }}{% if not loop.last %},{% endif %}
            {%- endfor %}
        from (
            select
                source_system,
                count(*) as events,
                cast(max(lateness_seconds) as double) as max_seconds,
                percentile(lateness_seconds, array({{ quantiles | join(', ') }})) as quantiles
            from {{ ledger }}
            where {{ window }}
            group by source_system
        ) as observed
        order by source_system
    {%- endset -%}
    {%- set observed = run_query(observed_sql) -%}
    {%- if observed.rows | length == 0 -%}
        {{ print('suggest_watermarks: no timed events arrived in the last ' ~ days ~ ' day(s) before as_of') }}
        {{ return('') }}
    {%- endif -%}

    {#- suggestions[source] = [seconds per tier] -#}
    {%- set suggestions = {} -%}
    {%- for row in observed.rows -%}
        {%- set seconds = [] -%}
        {%- for tier in var('watermark_tiers') -%}
            {%- set raw = row['q' ~ (shown | length + loop.index0)] -%}
            {%- set rounded = round_up_tolerance(raw) -%}
            {%- do seconds.append([rounded, seconds[-1] if seconds else 0] | max) -%}
        {%- endfor -%}
        {%- do suggestions.update({row['source_system']: seconds}) -%}
    {%- endfor -%}

    {#- Share of each source's events later than each suggestion, and than
        its current last tier. -#}
    {%- set share_sql -%}
        select
            source_system,
            {%- for tier in var('watermark_tiers') %}
            {%- set tier_index = loop.index0 %}
            {%- set suggested = {} %}
            {%- for source_system, seconds in suggestions.items() %}
                {%- do suggested.update({source_system: seconds[tier_index]}) %}
            {%- endfor %}
            avg(case when lateness_seconds > {{ latecomer__source_case('source_system', suggested, 'null') }}
                then 1.0 else 0.0 end) as suggested_{{ loop.index0 }},
            {%- endfor %}
            avg(case when lateness_seconds > {{ watermark_seconds() }} then 1.0 else 0.0 end) as current_last
        from {{ ledger }}
        where {{ window }}
        group by source_system
    {%- endset -%}
    {%- set shares = {} -%}
    {%- for row in run_query(share_sql).rows -%}
        {%- do shares.update({row['source_system']: row}) -%}
    {%- endfor -%}

    {{ print('Watermark suggestions from the ledger, arrival days ' ~ days ~ ' back from ' ~ as_of_ts()) }}
    {%- for row in observed.rows -%}
        {%- set source_system = row['source_system'] -%}
        {%- set current = source_watermark_tiers(source_system) -%}
        {{ print('') }}
        {{ print('source ' ~ source_system ~ ': ' ~ row['events'] ~ ' timed events; lateness p50 ' ~ format_hours(row['q0'])
            ~ ', p90 ' ~ format_hours(row['q1']) ~ ', p95 ' ~ format_hours(row['q2'])
            ~ ', p99 ' ~ format_hours(row['q3']) ~ ', p99.9 ' ~ format_hours(row['q4'])
            ~ ', max ' ~ format_hours(row['max_seconds'])) }}
        {{ print('  %-14s%-13s%-11s%-13s%s' | format('tier', 'alert_share', 'current_h', 'suggested_h', 'share_later_than_suggested')) }}
        {%- for tier in current -%}
            {%- set share = shares[source_system]['suggested_' ~ loop.index0] -%}
            {%- set note = '' if not loop.last else '  (would quarantine; the current tier quarantines '
                ~ '%.4f' | format(shares[source_system]['current_last']) ~ ')' -%}
            {{ print('  %-14s%-13s%-11s%-13s%.4f%s' | format(tier['name'], tier['alert_share'], tier['lateness_hours'],
                '%g' | format(suggestions[source_system][loop.index0] / 3600), share, note)) }}
        {%- endfor -%}
    {%- endfor -%}
    {{ print('') }}
    {{ print('As a var (dbt_project.yml, or --vars):') }}
    {{ print('source_watermarks:') }}
    {%- for source_system, seconds in suggestions.items() -%}
        {%- set tiers = [] -%}
        {%- for tier in var('watermark_tiers') -%}
            {%- do tiers.append(tier['name'] ~ ': {lateness_hours: ' ~ '%g' | format(seconds[loop.index0] / 3600) ~ '}') -%}
        {%- endfor -%}
        {{ print('  ' ~ source_system ~ ': {' ~ tiers | join(', ') ~ '}') }}
    {%- endfor -%}
{% endmacro %}

{#- Seconds rounded up to a tolerance people would write down: 5 minutes
    below an hour, whole hours below two days, whole days above; at least
    5 minutes. -#}
{% macro round_up_tolerance(seconds) -%}
    {%- set seconds = [seconds or 0, 1] | max -%}
    {%- set step = 300 if seconds <= 3600 else (3600 if seconds <= 172800 else 86400) -%}
    {{ return(((seconds / step) | round(0, 'ceil') | int) * step) }}
{%- endmacro %}

{% macro format_hours(seconds) -%}
    {{ return('%.2f h' | format((seconds or 0) / 3600)) }}
{%- endmacro %}
