{#- Revenue per event hour and source; restated with its event date. -#}
{{ config(
    materialized='restated',
    unique_key=['event_date', 'event_hour', 'source_system'],
    partition_by=latecomer__month_partitions('event_date'),
    meta={'test_scope': {'partition': 'event_date', 'run_column': 'changed_run_at'}},
) }}

with changes as (
    select * from {{ ref('silver_event_changes') }}
),

impacted as (
    {{ changed_partitions('changes', holds='follow') }}
),

silver_events as (
    select * from {{ ref('silver_events') }}
    where not is_deleted and event_date in (select partition_value from impacted)
),

recomputed as (
    select
        event_date,
        hour(event_ts) as event_hour,
        source_system,
        {{ revenue_measures() }}
    from silver_events
    group by event_date, hour(event_ts), source_system
),

final as (
    {{ restate('recomputed', 'impacted', ['event_date', 'event_hour', 'source_system'],
               revenue_measure_names()) }}
)

select * from final
