{#- Append-only log of customer dimension changes and the gold_revenue_by_tier
    partitions they restate: one row per customer and snapshot run that
    recorded or superseded versions of that customer in customer_history.
    Between two believed histories only the superseded and the newly recorded
    versions differ, so an event's member before the run is the superseded
    version covering it (else unknown) and after the run the recorded version
    covering it (else unknown); the event dates where it moved are the
    partitions to restate. -#}
{{ config(materialized='incremental', incremental_strategy='append', partition_by=['changed_date']) }}

{%- set hwm = latecomer__high_water_mark('source_run_at') %}
{#- Every row starts from a customer version recorded or superseded since
    the last run (changed_customers): none, no row. #}
{%- do latecomer__skip_write_unless_newer(ref('customer_history'), ['recorded_run_at', 'superseded_run_at'], hwm,
    'no customer version recorded or superseded since the last run') %}

with customer_history as (
    select * from {{ ref('customer_history') }}
),

silver_events as (
    select * from {{ ref('silver_events') }}
    where not is_deleted
),

recorded as (
    select
        customer_id,
        tier,
        region,
        valid_from,
        valid_to,
        recorded_run_at as source_run_at
    from customer_history
    where recorded_run_at > {{ hwm }}
),

superseded as (
    select
        customer_id,
        tier,
        region,
        valid_from,
        valid_to,
        superseded_run_at as source_run_at
    from customer_history
    where superseded_run_at > {{ hwm }}
),

changed_customers as (
    select
        customer_id,
        source_run_at
    from recorded
    union
    select
        customer_id,
        source_run_at
    from superseded
),

events_in_changed_versions as (
    select
        changed_customers.customer_id,
        changed_customers.source_run_at,
        silver_events.event_date,
        {{ customer_member('before_run.tier') }} as tier_before,
        {{ customer_member('before_run.region') }} as region_before,
        {{ customer_member('after_run.tier') }} as tier_after,
        {{ customer_member('after_run.region') }} as region_after
    from changed_customers
    inner join silver_events on changed_customers.customer_id = silver_events.user_id
    left join superseded as before_run
        on changed_customers.customer_id = before_run.customer_id
        and changed_customers.source_run_at = before_run.source_run_at
        and silver_events.event_ts >= before_run.valid_from
        and (before_run.valid_to is null or silver_events.event_ts < before_run.valid_to)
    left join recorded as after_run
        on changed_customers.customer_id = after_run.customer_id
        and changed_customers.source_run_at = after_run.source_run_at
        and silver_events.event_ts >= after_run.valid_from
        and (after_run.valid_to is null or silver_events.event_ts < after_run.valid_to)
    where before_run.customer_id is not null or after_run.customer_id is not null
),

moved_dates as (
    select
        customer_id,
        source_run_at,
        array_sort(collect_set(event_date)) as impacted_event_dates,
        count(*) as moved_events
    from events_in_changed_versions
    where not (tier_before = tier_after and region_before = region_after)
    group by customer_id, source_run_at
),

{#- Each side's versions as JSON: those the run superseded (before) and
    those it recorded (after). #}
{%- for side, versions in [('before', 'superseded'), ('after', 'recorded')] %}
versions_{{ side }} as (
    select
        customer_id,
        source_run_at,
        to_json(array_sort(collect_list(named_struct(
            'valid_from', valid_from, 'valid_to', valid_to, 'tier', tier, 'region', region
        )))) as {{ side }}_values,
        min(valid_from) as first_changed_from
    from {{ versions }}
    group by customer_id, source_run_at
),
{% endfor %}

final as (
    select
        'dimension_change' as action,
        changed_customers.customer_id,
        versions_before.before_values,
        versions_after.after_values,
        least(versions_before.first_changed_from, versions_after.first_changed_from) as changed_from,
        coalesce(moved_dates.impacted_event_dates, array()) as impacted_event_dates,
        coalesce(moved_dates.moved_events, 0) as moved_events,
        concat(
            'customer ', changed_customers.customer_id, ' history changed from ',
            cast(least(versions_before.first_changed_from, versions_after.first_changed_from) as string),
            ': ', cast(coalesce(moved_dates.moved_events, 0) as string), ' event(s) moved tier/region'
        ) as reason,
        changed_customers.source_run_at,
        {{ as_of_ts() }} as processed_at,
        {{ run_ts() }} as changed_run_at,
        to_date({{ run_ts() }}) as changed_date,
        '{{ invocation_id }}' as invocation_id
    from changed_customers
    left join versions_before
        on changed_customers.customer_id = versions_before.customer_id
        and changed_customers.source_run_at = versions_before.source_run_at
    left join versions_after
        on changed_customers.customer_id = versions_after.customer_id
        and changed_customers.source_run_at = versions_after.source_run_at
    left join moved_dates
        on changed_customers.customer_id = moved_dates.customer_id
        and changed_customers.source_run_at = moved_dates.source_run_at
)

select * from final
