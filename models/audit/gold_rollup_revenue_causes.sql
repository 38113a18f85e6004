{#- Why each published version of a weekly, monthly, quarterly or yearly
    (year-to-date) revenue row differs from the one before it, by cause
    (macros/publication/revenue_causes.sql). A period holds its days and the
    adjustments booked in it (revenue_rollup), and is recomputed in every run
    that changes one of them, so its causes since its last explanation are
    those of its days explained since (gold_daily_revenue_causes, explained
    earlier in the same run) and, under period_close adjust, the adjustments
    booked in it since. -#}
{{ config(partition_by=['explained_date']) }}

{%- set rollups = [
    ('week', 'gold_weekly_revenue'), ('month', 'gold_monthly_revenue'),
    ('quarter', 'gold_quarterly_revenue'), ('year', 'gold_ytd_revenue'),
] -%}

{%- set gold -%}
    {%- for grain, rollup in rollups %}
        select
            '{{ grain }}' as grain,
            {{ grain }}_start_date as period_start_date,
            source_system,
            version,
            orders,
            gross_revenue,
            refunds,
            net_revenue,
            source_changed_run_at,
            changed_run_at
        from {{ ref(rollup) }}
        {{ 'union all' if not loop.last }}
    {%- endfor %}
{%- endset %}

{% call(lower_bound) revenue_causes(gold, ['grain', 'period_start_date', 'source_system'], window='explained') -%}
    select
        grains.grain,
        cast(date_trunc(grains.grain, days.event_date) as date) as period_start_date,
        days.source_system,
        days.action,
        days.watermark_tier,
        days.change_reason,
        days.explained_run_at as changed_run_at,
        days.events,
        days.min_lateness_seconds,
        days.max_lateness_seconds,
        days.orders,
        days.gross_revenue,
        days.refunds
    from {{ ref('gold_daily_revenue_causes') }} as days
        lateral view explode(array('week', 'month', 'quarter', 'year')) grains
        as grain
    where days.explained_run_at > {{ lower_bound }}
    union all
    {#- An adjustment counts in the period it is booked in. #}
    select
        grains.grain,
        cast(date_trunc(grains.grain, booked.booked_date) as date) as period_start_date,
        booked.source_system,
        'adjustment' as action,
        cast(null as string) as watermark_tier,
        concat_ws(': ', concat('for ', cast(booked.adjusted_event_date as string)), booked.adjustment_reason)
            as change_reason,
        booked.changed_run_at,
        cast(1 as bigint) as events,
        cast(null as bigint) as min_lateness_seconds,
        cast(null as bigint) as max_lateness_seconds,
        booked.orders,
        booked.gross_revenue,
        booked.refunds
    from {{ ref('gold_daily_revenue_adjustments') }} as booked
        lateral view explode(array('week', 'month', 'quarter', 'year')) grains
        as grain
    where booked.changed_run_at > {{ lower_bound }}
{%- endcall %}
