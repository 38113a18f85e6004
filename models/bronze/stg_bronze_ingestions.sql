with bronze_ingestions as (
    select * from {{ source('bronze', 'bronze_ingestions') }}
)

select * from bronze_ingestions
