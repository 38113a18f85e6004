{#- gold_daily_revenue exactly as it was published 24 hours before compile time,
    or at var published_as_of (ISO-8601, UTC without an offset):
        dbt compile --select gold_published_yesterday --vars '{published_as_of: "2024-01-22T00:00:00+00:00"}'
    then run target/compiled/latecomer/analyses/gold_published_yesterday.sql. -#}
{%- set started = modules.datetime.datetime.strptime(run_started_at.strftime('%Y-%m-%d %H:%M:%S'), '%Y-%m-%d %H:%M:%S') -%}
{%- set yesterday = (started - modules.datetime.timedelta(days=1)).strftime('%Y-%m-%dT%H:%M:%S') -%}

with published as (
    select * from {{ gold_as_of('gold_daily_revenue', as_of_time=var('published_as_of', yesterday)) }}
),

final as (
    select
        event_date,
        source_system,
        orders,
        gross_revenue,
        refunds,
        net_revenue,
        status,
        version
    from published
)

select * from final
