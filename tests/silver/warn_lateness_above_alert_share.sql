{#- Watermark alerts: for the latest run, warns (does not fail) for each tier
    whose share of events arriving later than it exceeds the tier's alert_share.
    Tiers and shares are the watermark_tiers var. In a build it reads only the
    ledger partitions the build wrote, so a build with nothing new warns of
    nothing. -#}
{{ config(severity='warn') }}

{#- In a build, the ledger partitions this run wrote (macros/data_tests);
    in `dbt test`, the whole ledger. -#}
with ledger as (
    select * from {{ get_where_subquery(ref('silver_event_arrivals')) }}
),

newest_run as (
    select max(ledger_run_at) as ledger_run_at from ledger
),

latest_run as (
    select ledger.* from ledger
    inner join newest_run on ledger.ledger_run_at = newest_run.ledger_run_at
    where ledger.parse_error is null
),

shares as (
    {%- for tier in var('watermark_tiers') %}
    select
        '{{ tier["name"] }}' as watermark_tier,
        {{ tier['alert_share'] }} as alert_share,
        avg(case when lateness_seconds > {{ tier['lateness_hours'] * 3600 }} then 1.0 else 0.0 end)
            as share_later_than_tier,
        count(*) as events
    from latest_run
    {% if not loop.last %}union all{% endif %}
    {%- endfor %}
)

select * from shares
where share_later_than_tier > alert_share
