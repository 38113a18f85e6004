{#- The ledger's reading of bronze event rows, shared by the arrival ledger and
    by backfills and replays, which re-derive their window from bronze with the
    current code. Emits the CTEs `<name>_keyed`, `<name>_routed` and `<name>`;
    `<name>` has the ledger's columns except ledger_run_at and invocation_id. -#}
{% macro event_arrival_ctes(bronze_events, name) -%}
{{ name }}_keyed as (
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
    from {{ bronze_events }}
),

{{ name }}_routed as (
    select
        *,
        {{ watermark_tier('lateness_seconds') }} as watermark_tier,
        case
            when parse_error is not null then concat('malformed: ', parse_error)
            when coalesce(corrects_event_id, event_key) is null then 'null_natural_key'
            when {{ in_backfill_window('to_date(event_ts)') }} then null
            when lateness_seconds > {{ watermark_seconds() }} then 'beyond_watermark'
        end as quarantine_reason
    from {{ name }}_keyed
),

{{ name }} as (
    select
        {{ arrival_metadata_columns() }},
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
        raw_payload
    from {{ name }}_routed
)
{%- endmacro %}


{#- SQL: a quarantine row's columns taken from an arrival ledger row (`alias`),
    with `reason` (SQL) as its quarantine_reason: silver_quarantine writes them
    for the ledger's own quarantine route and for rows it holds later. -#}
{% macro quarantined_arrival_columns(alias, reason) -%}
    {%- for column in ['bronze_row_id', 'ingestion_id', 'source_system', 'event_id', 'event_key', 'event_type',
                       'event_ts', 'event_date', 'arrival_ts', 'lateness_seconds'] %}
    {{ alias }}.{{ column }},
    {%- endfor %}
    {{ reason }} as quarantine_reason,
    {{ alias }}.raw_payload
{%- endmacro %}
