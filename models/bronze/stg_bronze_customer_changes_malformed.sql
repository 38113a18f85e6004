{#- Malformed customer change lines, excluded from stg_bronze_customer_changes
    and so from the dimension. They stay in bronze for good; a corrected file
    landed later (a new ingestion) replaces them in the dimension. -#}
with customer_changes as (
    {{ bronze_customer_changes_or_empty(source('bronze_crm', 'bronze_customer_changes')) }}
),

malformed as (
    select
        {{ arrival_metadata_columns() }},
        customer_id,
        updated_at_raw,
        parse_error,
        raw_payload
    from customer_changes
    where parse_error is not null
)

select * from malformed
