{#- Revenue per event date and source. Only the event-date partitions whose
    silver rows changed since this model's last run are recomputed; see the
    restate macro for versioning, restatement and status. It is the judge of
    the publication gate: the dates it holds stay as published here and in
    every model that follows its holds (adapter/dbt/include/latecomer/macros/publication/holds.sql). -#}
{{ config(
    materialized='restated',
    unique_key=['event_date', 'source_system'],
    partition_by=latecomer__month_partitions('event_date'),
    publication_gate={'measure': 'net_revenue', 'count': 'orders', 'by': 'source_system'},
    meta={'test_scope': {'partition': 'event_date', 'run_column': 'changed_run_at'}},
) }}

with changes as (
    select * from {{ ref('silver_event_changes') }}
),

impacted as (
    {{ changed_partitions('changes', holds='judge') }}
),

silver_events as (
    select * from {{ ref('silver_events') }}
    where not is_deleted and event_date in (select partition_value from impacted)
),

recomputed as (
    select
        event_date,
        source_system,
        {{ revenue_measures() }}
    from silver_events
    group by event_date, source_system
),

final as (
    {{ restate('recomputed', 'impacted', ['event_date', 'source_system'], revenue_measure_names()) }}
)

select * from final
