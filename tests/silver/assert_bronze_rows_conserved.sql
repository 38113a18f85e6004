{#- Conservation: every bronze event row is in the ledger once, and every
    ledger row is in silver (as the winning version or counted as a superseded
    duplicate in version_count) or in quarantine (rows rejected with a
    publication hold went to silver first, and left it). Fails with the counts when
    they disagree.

    In a build (data_tests: run) bronze and the ledger are compared on the
    arrival-date partitions the build read, file by file: the bronze rows of
    the files the ledger holds rows of. A file landed while the build ran (on
    a shared catalog landings append beside a build) is the next build's,
    which consumes files by identity. The silver and quarantine totals,
    which need whole tables, are compared by `dbt test` (data_tests: all). -#}
-- depends_on: {{ ref("silver_events") }}, {{ ref("silver_quarantine") }}
{%- set whole_tables = latecomer__data_tests_scope() == 'all' %}

with
{%- if not whole_tables %}
run_partitions as (  -- noqa: ST03
    select distinct arrival_date from {{ ref('silver_event_arrivals') }}
    where ledger_run_at = {{ run_ts() }}
),

ledger_files as (  -- noqa: ST03
    select distinct ingestion_id from {{ ref('silver_event_arrivals') }}
    where arrival_date in (select run_partitions.arrival_date from run_partitions)
),
{%- endif %}

bronze as (
    select count(*) as bronze_rows from {{ ref('stg_bronze_events') }}
    {%- if not whole_tables %}
    where
        arrival_date in (select run_partitions.arrival_date from run_partitions)
        and ingestion_id in (select ledger_files.ingestion_id from ledger_files)
    {%- endif %}
),

ledger as (
    select
        count_if(route = 'silver') as routed_to_silver,
        count_if(route = 'quarantine') as routed_to_quarantine,
        count(*) as ledger_rows
    from {{ ref('silver_event_arrivals') }}
    {%- if not whole_tables %}
    where arrival_date in (select run_partitions.arrival_date from run_partitions)
    {%- endif %}
){%- if whole_tables %},

silver as (
    select coalesce(sum(version_count), 0) as silver_versions from {{ ref('silver_events') }}
),

quarantine as (
    select count(*) as quarantined_rows from {{ ref('silver_quarantine') }}
),

released as (
    select count(*) as released_rows from {{ ref('silver_quarantine') }}
    where status = 'released'
),

{# Rows routed to silver and held since: the arrivals behind a rejected
    publication hold (the replay that followed took them out of silver's
    counts) and corrections on a chain that does not resolve. #}
rejected_from_silver as (
    select count(*) as rejected_silver_rows from {{ ref('silver_quarantine') }}
    where quarantine_reason in ('publication_hold_rejected', 'unresolved_correction_chain')
)
{%- endif %}

select * from bronze
cross join ledger
{%- if whole_tables %}
cross join silver
cross join quarantine
cross join released
cross join rejected_from_silver
{%- endif %}
where
    bronze_rows != ledger_rows
    {%- if whole_tables %}
    or routed_to_quarantine != quarantined_rows - rejected_silver_rows
    or silver_versions + rejected_silver_rows != routed_to_silver + released_rows
    {%- endif %}
