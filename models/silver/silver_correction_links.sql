{#- Which event each correction names, one row per correction arrival: the
    small index silver_events follows correction chains through, so that it
    never reads the whole arrival ledger. Append-only, like the ledger. -#}
{{ config(incremental_strategy='append', partition_by=['arrival_date']) }}
{%- set hwm = latecomer__high_water_mark('ledger_run_at') %}
{%- do latecomer__skip_write_unless_newer(ref('silver_event_arrivals'), ['ledger_run_at'], hwm,
    'no arrival in the ledger since the last run') %}

with arrivals as (
    select * from {{ ref('silver_event_arrivals') }}
    where ledger_run_at > {{ hwm }}
),

final as (
    select
        source_system,
        event_id as alias_event_id,
        target_event_id as next_event_id,
        bronze_row_id,
        arrival_date,
        ledger_run_at
    from arrivals
    where record_kind = 'correction' and event_id is not null and event_id != target_event_id
)

select * from final
