{#- Revenue per UTC event date, customer tier and region. Each silver event
    counts under the customer_history version valid at its event_ts (user_id =
    customer_id), or under the `unknown` member when none was. Partitions are
    recomputed when their silver rows changed or when a dimension change moved
    one of their events to another member (gold_revenue_by_tier_changes,
    restatement_reason dimension_change); see the restate macro for versioning,
    restatement and status. -#}
{{ config(
    materialized='restated',
    unique_key=['event_date', 'tier', 'region'],
    partition_by=latecomer__month_partitions('event_date'),
    meta={'test_scope': {'partition': 'event_date', 'run_column': 'changed_run_at'}},
) }}

{%- set hwm = latecomer__high_water_mark('source_changed_run_at') %}

with event_changes as (
    select
        event_date,
        previous_event_date,
        action,
        changed_run_at
    from {{ ref('silver_event_changes') }}
    where changed_run_at > {{ hwm }}
),

dimension_changes as (
    select
        explode(impacted_event_dates) as event_date,
        cast(null as date) as previous_event_date,
        action,
        source_run_at as changed_run_at
    from {{ ref('gold_revenue_by_tier_changes') }}
    where source_run_at > {{ hwm }}
),

changes as (
    select * from event_changes
    union all
    select * from dimension_changes
),

impacted as (
    {{ changed_partitions('changes', holds='follow') }}
),

silver_events as (
    select * from {{ ref('silver_events') }}
    where not is_deleted and event_date in (select partition_value from impacted)
),

believed_versions as (
    select
        customer_id,
        tier,
        region,
        valid_from,
        valid_to
    from {{ ref('customer_history') }}
    where superseded_run_at is null
),

attributed_events as (
    select
        silver_events.event_date,
        silver_events.event_type,
        silver_events.amount,
        {{ customer_member('believed_versions.tier') }} as tier,
        {{ customer_member('believed_versions.region') }} as region
    from silver_events
    left join believed_versions
        on silver_events.user_id = believed_versions.customer_id
        and silver_events.event_ts >= believed_versions.valid_from
        and (believed_versions.valid_to is null or silver_events.event_ts < believed_versions.valid_to)
),

recomputed as (
    select
        event_date,
        tier,
        region,
        {{ revenue_measures() }}
    from attributed_events
    group by event_date, tier, region
),

final as (
    {{ restate('recomputed', 'impacted', ['event_date', 'tier', 'region'],
               revenue_measure_names()) }}
)

select * from final
