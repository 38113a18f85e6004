{#- Why each published version of a weekly, monthly, quarterly or yearly
    (year-to-date) revenue row differs from the one before it, by cause
    (macros/publication/revenue_causes.sql). A period holds its days and the
    adjustments booked in it (revenue_rollup), and is recomputed in every run
    that changes one of them, so its causes since its last explanation are
    those of its days explained since (gold_daily_revenue_causes, explained
    earlier in the same run) and, under period_close adjust, the adjustments
    booked in it since. -#}
{{ config(partition_by=['explained_date'], skip_if_inputs_unchanged=true, as_of_dependent=false) }}

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
        cast(date_trunc(grains.grain, changes.counted_date) as date) as period_start_date,
        changes.source_system,
        changes.action,
        changes.watermark_tier,
        changes.change_reason,
        changes.changed_run_at,
        changes.events,
        changes.min_lateness_seconds,
        changes.max_lateness_seconds,
        changes.orders,
        changes.gross_revenue,
        changes.refunds
    from (
        select
            event_date as counted_date,
            source_system,
            action,
            watermark_tier,
            change_reason,
            explained_run_at as changed_run_at,
            events,
            min_lateness_seconds,
            max_lateness_seconds,
            orders,
            gross_revenue,
            refunds
        from {{ ref('gold_daily_revenue_causes') }}
        where explained_run_at > {{ lower_bound }}
        union all
        {#- An adjustment counts in the period it is booked in. #}
        select
            booked_date as counted_date,
            source_system,
            'adjustment' as action,
            cast(null as string) as watermark_tier,
            concat_ws(': ', concat('for ', cast(adjusted_event_date as string)), adjustment_reason) as change_reason,
            changed_run_at,
            cast(1 as bigint) as events,
            cast(null as bigint) as min_lateness_seconds,
            cast(null as bigint) as max_lateness_seconds,
            orders,
            gross_revenue,
            refunds
        from {{ ref('gold_daily_revenue_adjustments') }}
        where changed_run_at > {{ lower_bound }}
    ) as changes
        lateral view explode(array({{ "'" ~ rollups | map(attribute=0) | join("', '") ~ "'" }})) grains as grain
{%- endcall %}
