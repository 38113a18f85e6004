{#- Revenue per week (starting date) and source, rolled up from
    gold_daily_revenue: a week is recomputed when one of its days changed,
    and its status is the least settled of its days. -#}
{{ config(unique_key=['week_start_date', 'source_system']) }}

with daily_changes as (
    select
        *,
        date_trunc('WEEK', event_date) as period_date,
        coalesce(case when restated_on = last_changed_at then restatement_reason end, 'insert') as action
    from {{ ref('gold_daily_revenue') }}
),

impacted as (
    {{ changed_partitions('daily_changes', partition_expr='cast(period_date as date)',
                          previous_partition_expr='cast(period_date as date)') }}
),

daily as (
    select * from {{ ref('gold_daily_revenue') }}
    where cast(date_trunc('WEEK', event_date) as date) in (select partition_value from impacted)
),

recomputed as (
    select
        cast(date_trunc('WEEK', event_date) as date) as week_start_date,
        source_system,
        sum(orders) as orders,
        sum(gross_revenue) as gross_revenue,
        sum(refunds) as refunds,
        sum(net_revenue) as net_revenue,
        case min(case status when 'live' then 0 when 'preliminary' then 1 else 2 end)
            when 0 then 'live' when 1 then 'preliminary' else 'final'
        end as status
    from daily
    group by cast(date_trunc('WEEK', event_date) as date), source_system
),

final as (
    {{ restate('recomputed', 'impacted', ['week_start_date', 'source_system'],
               ['orders', 'gross_revenue', 'refunds', 'net_revenue'],
               partition_column='week_start_date', status='rolled_up') }}
)

select * from final
