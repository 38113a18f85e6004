{#- What a dbt user on Spark would write: dbt runs this once per day batch,
    reading only that day's silver rows (the source's event_time), and
    dbt-spark overwrites the partitions the batch returns. -#}
{{ config(
    materialized='incremental',
    incremental_strategy='microbatch',
    event_time='event_date',
    batch_size='day',
    lookback=var('lookback_days') | int,
    begin=var('begin'),
    partition_by=['event_date'],
) }}

with silver_events as (
    select * from {{ source('latecomer_silver', 'silver_events') }}
    where not is_deleted
),

final as (
    select
        event_date,
        source_system,
        count_if(event_type = 'order_placed') as orders,
        coalesce(sum(case when event_type = 'order_placed' then amount end), 0) as gross_revenue,
        coalesce(sum(case when event_type = 'refund' then amount end), 0) as refunds,
        coalesce(sum(case when event_type = 'order_placed' then amount end), 0)
        - coalesce(sum(case when event_type = 'refund' then amount end), 0) as net_revenue
    from silver_events
    group by event_date, source_system
)

select * from final
