{#- Bronze events with their lateness; a view, so bronze stays the only copy. -#}
with bronze_events as (
    select * from {{ source('bronze', 'bronze_events') }}
),

with_lateness as (
    select
        *,
        {{ lateness_seconds('arrival_ts', 'event_ts') }} as lateness_seconds
    from bronze_events
)

select * from with_lateness
