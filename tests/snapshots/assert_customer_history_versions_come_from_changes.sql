{#- Every believed version starts at a well-formed, non-deleting change of its
    customer carrying its tier and region: the snapshot invents nothing.
    Fails with the versions that have no such change. -#}
with customer_history as (
    select * from {{ ref('customer_history') }}
    where superseded_run_at is null
),

changes as (
    select * from {{ ref('stg_bronze_customer_changes') }}
    where not is_deleted
),

unexplained as (
    select
        customer_history.customer_id,
        customer_history.tier,
        customer_history.region,
        customer_history.valid_from
    from customer_history
    left anti join changes
        on customer_history.customer_id = changes.customer_id
        and customer_history.valid_from = changes.updated_at
        and customer_history.tier <=> changes.tier
        and customer_history.region <=> changes.region
)

select * from unexplained
