{#- Each source's events per event date against its trailing baseline: the
    mean over the `volume_baseline_days` (var) dates
    before it, a date with no events counting zero. Status tells a live date
    still filling in from a settled one. -#}
{{ config(materialized='recomputed') }}

{%- set baseline_days = var('volume_baseline_days') %}

with volume as (
    select * from {{ ref('volume_by_event_date') }}
),

baselined as (
    select
        source_system,
        event_date,
        events,
        orders,
        coalesce(sum(events) over (
            partition by source_system order by unix_date(event_date)
            range between {{ baseline_days }} preceding and 1 preceding
        ), 0) / {{ baseline_days }} as baseline_events,
        count(*) over (
            partition by source_system order by unix_date(event_date)
            range between {{ baseline_days }} preceding and 1 preceding
        ) as baseline_dates_seen
    from volume
),

final as (
    select
        *,
        case when baseline_events > 0 then events / baseline_events end as volume_ratio,
        {{ partition_status('event_date', as_of_ts()) }} as status,
        {{ as_of_ts() }} as as_of_ts
    from baselined
)

select * from final
