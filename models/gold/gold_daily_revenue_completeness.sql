{#- gold_daily_revenue with each row's completeness beside it, for a
    dashboard to read as is: "net revenue 1,234 (estimated 92% complete,
    expected to end at 1,340)". A final partition is complete by definition;
    a non-final one carries gold_completeness's estimate at its as_of. -#}
{{ config(materialized='recomputed', as_of_dependent=false) }}

with daily as (
    select * from {{ ref('gold_daily_revenue') }}
),

completeness as (
    select * from {{ ref('gold_completeness') }}
),

by_metric as (
    select
        event_date,
        source_system,
        max(as_of_ts) as completeness_as_of_ts,
        {%- for metric in ['orders', 'gross_revenue', 'net_revenue'] %}
        max(case when metric = '{{ metric }}' then completeness end) as {{ metric }}_completeness,
        max(case when metric = '{{ metric }}' then estimated_final end) as {{ metric }}_estimated_final,
        max(case when metric = '{{ metric }}' then estimated_final_low end) as {{ metric }}_estimated_final_low,
        max(case when metric = '{{ metric }}' then estimated_final_high end) as {{ metric }}_estimated_final_high
        {%- if not loop.last %},{% endif %}
        {%- endfor %}
    from completeness
    group by event_date, source_system
),

final as (
    select
        daily.event_date,
        daily.source_system,
        daily.status,
        daily.orders,
        daily.gross_revenue,
        daily.net_revenue,
        {%- for metric in ['orders', 'gross_revenue', 'net_revenue'] %}
        case when daily.status = 'final' then 1.0 else by_metric.{{ metric }}_completeness end
            as {{ metric }}_completeness,
        case when daily.status = 'final' then cast(daily.{{ metric }} as double) else by_metric.{{ metric }}_estimated_final end
            as {{ metric }}_estimated_final,
        case when daily.status = 'final' then cast(daily.{{ metric }} as double) else by_metric.{{ metric }}_estimated_final_low end
            as {{ metric }}_estimated_final_low,
        case when daily.status = 'final' then cast(daily.{{ metric }} as double) else by_metric.{{ metric }}_estimated_final_high end
            as {{ metric }}_estimated_final_high,
        {%- endfor %}
        by_metric.completeness_as_of_ts,
        daily.restated_on,
        daily.restatement_reason
    from daily
    left join by_metric
        on daily.event_date = by_metric.event_date and daily.source_system = by_metric.source_system
)

select * from final
