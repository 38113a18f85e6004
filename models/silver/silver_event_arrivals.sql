{#- The arrival ledger: one row per bronze event row, in the run that first
    processed it, with its UTC event time, natural key, lateness, watermark tier
    and route (silver or quarantine). Append-only; the conservation test counts
    every bronze row here. The reading of a bronze row is event_arrival_ctes. -#}
{{ config(incremental_strategy='append', partition_by=['arrival_date']) }}

-- depends_on: {{ ref('stg_bronze_ingestions') }}
{%- set batch = new_ingestions('events') %}
{%- do latecomer__skip_write('no file landed since the last run') if is_incremental() and execute
    and batch['ids'] | length == 0 %}

with bronze_events as (
    select * from {{ ref('stg_bronze_events') }}
    where {{ batch['predicate'] }}
),

{{ event_arrival_ctes('bronze_events', 'arrivals') }},

final as (
    select
        *,
        {{ run_ts() }} as ledger_run_at,
        '{{ invocation_id }}' as invocation_id
    from arrivals
)

select * from final
