{#- Lateness per source and arrival day, from the arrival ledger: events, the
    share later than each watermark tier (the source's own tiers), lateness
    percentiles and the share quarantined. An arrival day is recomputed whole
    when the ledger gained rows for it since this model last ran, so a crash
    between the two is caught up by the next run. -#}
{{ config(unique_key=['source_system', 'arrival_date'], partition_by=latecomer__month_partitions('arrival_date')) }}

{%- set hwm = latecomer__high_water_mark('last_ledger_run_at') %}
{#- No ledger row since the last run touches no arrival day. #}
{%- do latecomer__skip_write_unless_newer(ref('silver_event_arrivals'), ['ledger_run_at'], hwm,
    'no arrival in the ledger since the last run') %}

with ledger as (
    select * from {{ ref('silver_event_arrivals') }}
),

touched as (
    select distinct arrival_date from ledger
    where ledger_run_at > {{ hwm }}
),

{# Lateness counts for well-formed rows only: a malformed row's event time
    is not to be trusted. #}
arrivals as (
    select
        ledger.*,
        case when ledger.parse_error is null then ledger.lateness_seconds end as timed_lateness
    from ledger
    where ledger.arrival_date in (select touched.arrival_date from touched)
),

final as (
    select
        source_system,
        arrival_date,
        count(*) as events,
        count_if(parse_error is not null) as malformed_events,
        count(timed_lateness) as timed_events,
        count_if(route = 'quarantine') as quarantined_events,
        count_if(route = 'quarantine') / count(*) as quarantined_share,
        {%- for tier in var('watermark_tiers') %}
        cast(avg(case
            when timed_lateness > {{ watermark_seconds(tier_name=tier['name']) }} then 1
            when timed_lateness is not null then 0
        end) as double) as share_later_than_{{ tier['name'] }},
        {%- endfor %}
        percentile(timed_lateness, 0.5) as lateness_p50_seconds,
        percentile(timed_lateness, 0.9) as lateness_p90_seconds,
        percentile(timed_lateness, 0.95) as lateness_p95_seconds,
        percentile(timed_lateness, 0.99) as lateness_p99_seconds,
        max(timed_lateness) as lateness_max_seconds,
        min(arrival_ts) as first_arrival_ts,
        max(arrival_ts) as last_arrival_ts,
        max(ledger_run_at) as last_ledger_run_at,
        {{ run_ts() }} as metrics_run_at
    from arrivals
    group by source_system, arrival_date
)

select * from final
