{#- Append-only change log of silver: one row per key per run in which the
    key's row changed, with values before and after. Gold reads it to find the
    event-date partitions to restate; the audit table is built from it. -#}
{{ config(incremental_strategy='append', partition_by=['changed_date']) }}
{%- set hwm = latecomer__high_water_mark('changed_run_at') %}
{%- do latecomer__skip_write_unless_newer(ref('silver_events'), ['changed_run_at'], hwm,
    'no silver row changed since the last run') %}

with silver_events as (
    select * from {{ ref('silver_events') }}
    where changed_run_at > {{ hwm }}
),

final as (
    select
        event_id,
        source_system,
        last_action as action,
        change_reason,
        event_type,
        previous_event_type,
        user_id,
        previous_user_id,
        amount,
        previous_amount,
        event_ts,
        previous_event_ts,
        event_date,
        previous_event_date,
        is_deleted,
        previous_is_deleted,
        record_kind,
        arrival_ts,
        lateness_seconds,
        watermark_tier,
        version_count,
        bronze_row_id,
        processed_at,
        changed_run_at,
        to_date(changed_run_at) as changed_date,
        invocation_id
    from silver_events
)

select * from final
