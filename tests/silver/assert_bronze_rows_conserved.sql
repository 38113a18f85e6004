{#- Conservation: every bronze event row is in silver (as the winning version
    or counted as a superseded duplicate in version_count) or in quarantine.
    Fails with the counts when they disagree. -#}
with bronze as (
    select count(*) as bronze_rows from {{ ref('stg_bronze_events') }}
),

ledger as (
    select
        count_if(route = 'silver') as routed_to_silver,
        count_if(route = 'quarantine') as routed_to_quarantine,
        count(*) as ledger_rows
    from {{ ref('silver_event_arrivals') }}
),

silver as (
    select coalesce(sum(version_count), 0) as silver_versions from {{ ref('silver_events') }}
),

quarantine as (
    select count(*) as quarantined_rows from {{ ref('silver_quarantine') }}
),

released as (
    select count(*) as released_rows from {{ ref('silver_quarantine') }}
    where status = 'released'
)

select * from bronze
cross join ledger
cross join silver
cross join quarantine
cross join released
where
    bronze_rows != ledger_rows
    or routed_to_quarantine != quarantined_rows
    or silver_versions != routed_to_silver + released_rows
