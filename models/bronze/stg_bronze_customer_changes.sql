{#- Well-formed customer changes, one row per landed line. Duplicates and
    out-of-order changes are kept: the customer_history snapshot resolves
    them. Malformed lines stay in bronze and are listed by
    stg_bronze_customer_changes_malformed. -#}
with customer_changes as (
    {{ bronze_customer_changes_or_empty(source('bronze_crm', 'bronze_customer_changes')) }}
),

well_formed as (
    select
        {{ arrival_metadata_columns() }},
        customer_id,
        tier,
        region,
        updated_at,
        is_deleted
    from customer_changes
    where parse_error is null
)

select * from well_formed
