{#- Every lateness alert that holds at as_of (the var, or the build's start),
    one row per alert and source: what was observed against what is allowed.
    Each alert is a data test (tests/monitoring) with its severity from the
    `lateness_alerts` var, where the thresholds live too; a source can have
    its own thresholds under `sources`. A small table rebuilt when its inputs
    or as_of moved (materialized='recomputed'): the alert tests read it
    instead of each computing the alerts again, and a build with nothing new
    at the same as_of leaves it alone. -#}
{{ config(materialized='recomputed') }}

with by_arrival_day as (
    select * from {{ ref('lateness_by_arrival_day') }}
),

quarantine as (
    select * from {{ ref('silver_quarantine') }}
),

recent_days as (
    select * from by_arrival_day
    where last_arrival_ts > {{ as_of_ts() }} - make_dt_interval(0, {{ alert_setting_sql('late_share', 'window_hours') }}, 0, 0)
),

{# A source's share of events later than a tier, over the window, above
    the tier's alert_share. #}
late_share_by_tier as (
    {%- for tier in var('watermark_tiers') %}
    select
        source_system,
        '{{ tier["name"] }}' as subject,
        sum(share_later_than_{{ tier['name'] }} * timed_events) / sum(timed_events) as observed,
        {{ watermark_alert_share(tier['name']) }} as threshold,
        sum(timed_events) as events
    from recent_days
    group by source_system
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
),

late_share as (
    select
        'late_share' as alert,
        source_system,
        subject,
        observed,
        threshold,
        events
    from late_share_by_tier
    where events >= {{ alert_setting_sql('late_share', 'min_events') }} and observed > threshold
),

{# An arrival day's p99 lateness above `factor` times the mean p99 of the
    source's `baseline_days` arrival days before it. #}
p99_baselined as (
    select
        *,
        avg(lateness_p99_seconds) over (
            partition by source_system order by unix_date(arrival_date)
            range between {{ alert_setting_sql('p99_lateness', 'baseline_days') }} preceding and 1 preceding
        ) as baseline_p99_seconds,
        count(lateness_p99_seconds) over (
            partition by source_system order by unix_date(arrival_date)
            range between {{ alert_setting_sql('p99_lateness', 'baseline_days') }} preceding and 1 preceding
        ) as baseline_days_seen
    from by_arrival_day
),

p99_lateness as (
    select
        'p99_lateness' as alert,
        source_system,
        cast(arrival_date as string) as subject,
        lateness_p99_seconds as observed,
        {{ alert_setting_sql('p99_lateness', 'factor') }} * baseline_p99_seconds as threshold,
        timed_events as events
    from p99_baselined
    where
        last_arrival_ts > {{ as_of_ts() }} - make_dt_interval(0, {{ alert_setting_sql('p99_lateness', 'window_hours') }}, 0, 0)
        and timed_events >= {{ alert_setting_sql('p99_lateness', 'min_events') }}
        and baseline_days_seen >= {{ alert_setting_sql('p99_lateness', 'min_baseline_days') }}
        and lateness_p99_seconds > {{ alert_setting_sql('p99_lateness', 'factor') }} * baseline_p99_seconds
),

{# Per source: hours since its last arrival, and events arrived in the last
    window against the mean of the windows before it. #}
flow as (
    select
        source_system,
        (unix_seconds({{ as_of_ts() }}) - unix_seconds(max(last_arrival_ts))) / 3600.0 as silent_hours,
        sum(case
            when
                arrival_date > date_sub(to_date({{ as_of_ts() }}), {{ alert_setting_sql('flow_interruption', 'window_days') }})
                and first_arrival_ts <= {{ as_of_ts() }} then events
            else 0
        end) as window_events,
        sum(case
            when
                arrival_date <= date_sub(to_date({{ as_of_ts() }}), {{ alert_setting_sql('flow_interruption', 'window_days') }})
                and arrival_date > date_sub(
                    to_date({{ as_of_ts() }}),
                    {{ alert_setting_sql('flow_interruption', 'window_days') }} * (1 + {{ alert_setting_sql('flow_interruption', 'baseline_windows') }})
                )
                then events
            else 0
        end) / {{ alert_setting_sql('flow_interruption', 'baseline_windows') }} as baseline_window_events
    from by_arrival_day
    where first_arrival_ts <= {{ as_of_ts() }}
    group by source_system
    having max(last_arrival_ts) > {{ as_of_ts() }} - make_dt_interval({{ alert_setting_sql('flow_interruption', 'forget_after_days') }}, 0, 0, 0)
),

flow_interruption as (
    select
        'flow_stopped' as alert,
        source_system,
        'hours since last arrival' as subject,
        silent_hours as observed,
        {{ alert_setting_sql('flow_interruption', 'max_silence_hours') }} as threshold,
        window_events as events
    from flow
    where silent_hours > {{ alert_setting_sql('flow_interruption', 'max_silence_hours') }}
    union all
    select
        'volume_drop' as alert,
        source_system,
        'events in window / baseline' as subject,
        window_events / baseline_window_events as observed,
        {{ alert_setting_sql('flow_interruption', 'min_ratio') }} as threshold,
        window_events as events
    from flow
    where
        baseline_window_events >= {{ alert_setting_sql('flow_interruption', 'min_baseline_events') }}
        and window_events / baseline_window_events < {{ alert_setting_sql('flow_interruption', 'min_ratio') }}
),

{# Rows still quarantined longer than max_age_hours after first seen. #}
quarantine_backlog as (
    select
        'quarantine_backlog' as alert,
        source_system,
        'hours held, oldest row' as subject,
        (unix_seconds({{ as_of_ts() }}) - unix_seconds(min(first_seen_at))) / 3600.0 as observed,
        {{ alert_setting_sql('quarantine_backlog', 'max_age_hours') }} as threshold,
        count(*) as events
    from quarantine
    where
        status = 'quarantined'
        and first_seen_at < {{ as_of_ts() }}
        - make_dt_interval(0, {{ alert_setting_sql('quarantine_backlog', 'max_age_hours') }}, 0, 0)
    group by source_system
),

alerts as (
    select * from late_share
    union all
    select * from p99_lateness
    union all
    select * from flow_interruption
    union all
    select * from quarantine_backlog
),

final as (
    select
        alert,
        source_system,
        subject,
        cast(observed as double) as observed,
        cast(threshold as double) as threshold,
        cast(events as bigint) as events,
        {{ as_of_ts() }} as as_of_ts
    from alerts
)

select * from final
