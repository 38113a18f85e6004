{#- Watermark alerts: for the latest run, warns (does not fail) for each tier
    whose share of events arriving later than it exceeds the tier's alert_share.
    Tiers and shares are the watermark_tiers var. -#}
{{ config(severity='warn') }}

with latest_run as (
    select * from {{ ref('silver_event_arrivals') }}
    where
        parse_error is null
        and ledger_run_at = (select max(ledger_run_at) from {{ ref('silver_event_arrivals') }})
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
