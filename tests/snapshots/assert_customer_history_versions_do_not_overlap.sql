{#- The believed versions of a customer tile time without overlap: each ends
    after it starts and no later than the next one starts, only the last may be
    open, and is_current means open and believed. Fails with offending rows. -#}
with customer_history as (
    select * from {{ ref('customer_history') }}
),

believed as (
    select
        customer_id,
        valid_from,
        valid_to,
        is_current,
        lead(valid_from) over (partition by customer_id order by valid_from) as next_valid_from
    from customer_history
    where superseded_run_at is null
),

superseded_but_current as (
    select
        customer_id,
        valid_from,
        valid_to,
        is_current,
        cast(null as timestamp) as next_valid_from,
        'superseded row marked current' as problem
    from customer_history
    where superseded_run_at is not null and is_current
),

broken as (
    select
        *,
        case
            when valid_to <= valid_from then 'ends before it starts'
            when next_valid_from is not null and (valid_to is null or valid_to > next_valid_from)
                then 'overlaps the next version'
            when is_current != (valid_to is null) then 'is_current disagrees with valid_to'
        end as problem
    from believed
),

final as (
    select * from broken
    where problem is not null
    union all
    select * from superseded_but_current
)

select * from final
