{#- How often each published period has been restated, and whether it was in
    the last 7 days before the newest run's as_of ("periods restated this
    week": where restatements_last_7_days > 0). -#}
{{ config(materialized='view') }}

with digest as (
    select * from {{ ref('restatement_digest') }}
),

newest as (
    select max(as_of) as newest_as_of from digest
)

select
    digest.model,
    digest.period,
    count(*) as restatements,
    min(digest.as_of) as first_restated_at,
    max(digest.as_of) as last_restated_at,
    count_if(digest.as_of > newest.newest_as_of - interval 7 days) as restatements_last_7_days
from digest
cross join newest
group by digest.model, digest.period
