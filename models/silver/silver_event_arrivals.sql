{#- The arrival ledger: one row per bronze event row, in the run that first
    processed it, with its UTC event time, natural key, lateness, watermark tier
    and route (silver or quarantine). Append-only; the conservation test counts
    every bronze row here. -#}
{{ config(incremental_strategy='append', partition_by=['arrival_date']) }}

{%- set batch = new_ingestions(ref('stg_bronze_ingestions'), 'events') %}

with bronze_events as (
    select * from {{ ref('stg_bronze_events') }}
    where {{ batch['predicate'] }}
),

keyed as (
    select
        *,
        coalesce(
            event_id,
            case
                when user_id is not null and event_ts is not null and event_type is not null
                    then {{ surrogate_event_key('source_system', 'event_type', 'user_id', 'event_ts', 'amount') }}
            end
        ) as event_key,
        case
            when is_deleted then 'deletion'
            when is_correction then 'correction'
            else 'original'
        end as record_kind
    from bronze_events
),

routed as (
    select
        *,
        {{ watermark_tier('lateness_seconds') }} as watermark_tier,
        case
            when parse_error is not null then concat('malformed: ', parse_error)
            when coalesce(corrects_event_id, event_key) is null then 'null_natural_key'
            when {{ in_backfill_window('to_date(event_ts)') }} then null
            when lateness_seconds > {{ last_watermark_hours() * 3600 }} then 'beyond_watermark'
        end as quarantine_reason
    from keyed
),

final as (
    select
        bronze_row_id,
        ingestion_id,
        source_system,
        source_file,
        line_number,
        arrival_ts,
        arrival_date,
        ingested_at,
        event_id,
        event_key,
        case when record_kind = 'original' then event_key else coalesce(corrects_event_id, event_key) end
            as target_event_id,
        corrects_event_id,
        record_kind,
        case record_kind when 'deletion' then 3 when 'correction' then 2 else 1 end as precedence,
        event_type,
        user_id,
        amount,
        event_ts,
        to_date(event_ts) as event_date,
        lateness_seconds,
        watermark_tier,
        case when quarantine_reason is null then 'silver' else 'quarantine' end as route,
        quarantine_reason,
        parse_error,
        raw_payload,
        {{ run_ts() }} as ledger_run_at,
        '{{ invocation_id }}' as invocation_id
    from routed
)

select * from final
