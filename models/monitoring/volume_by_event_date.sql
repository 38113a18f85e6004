{#- Events per source and event date in silver (duplicates merged, deletions
    out), recomputed for the event dates silver's change log touched since
    this model last ran. volume_against_baseline compares each date with the
    days before it. -#}
{{ config(unique_key=['source_system', 'event_date'], partition_by=latecomer__month_partitions('event_date')) }}

{%- set hwm = latecomer__high_water_mark('source_changed_run_at') %}
{#- No change logged since the last run touches no date: nothing to count. #}
{%- do latecomer__skip_write_unless_newer(ref('silver_event_changes'), ['changed_run_at'], hwm,
    'no silver change since the last run') %}

with changes as (
    select * from {{ ref('silver_event_changes') }}
    where changed_run_at > {{ hwm }}
),

touched as (
    select event_date from changes
    where event_date is not null
    union
    select previous_event_date from changes
    where previous_event_date is not null
),

silver_events as (
    select * from {{ ref('silver_events') }}
    where event_date in (select touched.event_date from touched)
),

counted as (
    select
        source_system,
        event_date,
        count_if(not is_deleted) as events,
        count_if(not is_deleted and event_type = 'order_placed') as orders
    from silver_events
    group by source_system, event_date
),

{# A source whose events all left a date (deleted, or corrected to another
    date) keeps its row there, at zero. #}
keys as (
    select
        source_system,
        event_date
    from counted
    {%- if is_incremental() %}
    union
    select
        source_system,
        event_date
    from {{ this }}
    where event_date in (select touched.event_date from touched)
    {%- endif %}
),

final as (
    select
        keys.source_system,
        keys.event_date,
        coalesce(counted.events, 0) as events,
        coalesce(counted.orders, 0) as orders,
        (select max(changes.changed_run_at) from changes) as source_changed_run_at,
        {{ run_ts() }} as volume_run_at
    from keys
    left join counted
        on keys.source_system = counted.source_system and keys.event_date = counted.event_date
)

select * from final
