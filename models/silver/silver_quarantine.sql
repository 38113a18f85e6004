{#- Rows held out of silver and gold, with their reason and raw payload:
    malformed lines, rows without a natural key, events later than the last
    watermark tier, corrections on a chain that does not resolve (a cycle, or
    longer than silver_correction_chains follows), and the arrivals behind a
    rejected publication hold. A steward releases a row (it then merges and restates like
    any late event) or rejects it with a reason; nothing leaves this table.
    A backfill or replay releases the window's rows held for lateness alone:
    inside the window no watermark applies. -#}
{{ config(unique_key='bronze_row_id') }}

{%- set run_hwm = latecomer__high_water_mark('status_run_at') %}
{%- set window = backfill_window() if is_incremental() else none %}
{%- set decisions_hwm = latecomer__high_water_mark('decided_at') %}
{#- Outside a backfill window every row below comes from a ledger row or a
    steward decision since the last run: with neither, nothing changes. #}
{%- do latecomer__skip_write('no arrival or steward decision since the last run') if is_incremental() and not window
    and not latecomer__any_rows('select 1 from ' ~ ref('silver_event_arrivals') ~ ' where ledger_run_at > ' ~ run_hwm
        ~ ' union all select 1 from ' ~ ref('stg_steward_decisions') ~ ' where decided_at > ' ~ decisions_hwm) %}

with arrivals as (
    select * from {{ ref('silver_event_arrivals') }}
    where route = 'quarantine' and ledger_run_at > {{ run_hwm }}
),

decisions as (
    select * from {{ ref('stg_steward_decisions') }}
    where decided_at > {{ decisions_hwm }}
),

unresolved_aliases as (
    select
        source_system,
        alias_event_id
    from {{ ref('silver_correction_chains') }}
    where not is_resolved
),

{# An arrival naming an alias whose chain does not resolve would be merged
    under whatever id its chain stopped at: it waits here instead, and the
    build goes on (assert_correction_chains_resolve checks none reached
    silver). #}
unresolved_chain_arrivals as (
    select
        {{ quarantined_arrival_columns('ledger', "'unresolved_correction_chain'") }},
        {{ as_of_ts() }} as first_seen_at,
        'quarantined' as status,
        cast(null as string) as decision_reason,
        cast(null as string) as decided_by,
        cast(null as timestamp) as decided_at
    from {{ ref('silver_event_arrivals') }} as ledger
    left semi join unresolved_aliases
        on ledger.source_system = unresolved_aliases.source_system
        and ledger.target_event_id = unresolved_aliases.alias_event_id
    where ledger.route = 'silver' and ledger.ledger_run_at > {{ run_hwm }}
),

{% if is_incremental() %}
existing as (
    select * from {{ this }}
),
{% endif %}

newly_quarantined as (
    select
        {{ quarantined_arrival_columns('arrivals', 'arrivals.quarantine_reason') }},
        {{ as_of_ts() }} as first_seen_at,
        'quarantined' as status,
        cast(null as string) as decision_reason,
        cast(null as string) as decided_by,
        cast(null as timestamp) as decided_at
    from arrivals
),

{% if is_incremental() %}
{#- Steward decisions, and during a backfill or replay the release of the
    window's rows held for lateness alone (a steward decision wins). #}
status_changes as (
    select
        bronze_row_id,
        case decision when 'release' then 'released' else 'rejected' end as status,
        reason as decision_reason,
        actor as decided_by,
        decided_at
    from decisions
    {%- if window and var('backfill_releases_quarantine', true) %}
    union all
    select
        existing.bronze_row_id,
        'released' as status,
        {{ backfill_reason_sql() }} as decision_reason,
        {{ latecomer__sql_string(var('actor')) }} as decided_by,
        {{ run_ts() }} as decided_at
    from existing
    left anti join decisions on existing.bronze_row_id = decisions.bronze_row_id
    where
        existing.quarantine_reason = 'beyond_watermark'
        and existing.event_date between date'{{ window.start }}' and date'{{ window.end }}'
    {%- endif %}
),

decided as (
    select
        existing.bronze_row_id,
        existing.ingestion_id,
        existing.source_system,
        existing.event_id,
        existing.event_key,
        existing.event_type,
        existing.event_ts,
        existing.event_date,
        existing.arrival_ts,
        existing.lateness_seconds,
        existing.quarantine_reason,
        existing.raw_payload,
        existing.first_seen_at,
        status_changes.status,
        status_changes.decision_reason,
        status_changes.decided_by,
        status_changes.decided_at
    from existing
    inner join status_changes on existing.bronze_row_id = status_changes.bronze_row_id
    where existing.status = 'quarantined'
),
{% endif %}

{# A rejected publication hold (python -m python_jobs.landing.steward holds
    reject) rejects the arrivals behind the held change: rows that had gone
    to silver come here as rejected, and the replay the steward runs next
    rebuilds their dates without them. #}
rejected_from_silver as (
    select
        {{ quarantined_arrival_columns('ledger', "'publication_hold_rejected'") }},
        {{ as_of_ts() }} as first_seen_at,
        'rejected' as status,
        decisions.reason as decision_reason,
        decisions.actor as decided_by,
        decisions.decided_at
    from decisions
    inner join {{ ref('silver_event_arrivals') }} as ledger
        on decisions.bronze_row_id = ledger.bronze_row_id
    {%- if is_incremental() %}
    left anti join existing on decisions.bronze_row_id = existing.bronze_row_id
    {%- endif %}
    where decisions.decision = 'reject' and ledger.route = 'silver'
),

changed as (
    select * from newly_quarantined
    union all
    select * from rejected_from_silver
    union all
    select * from unresolved_chain_arrivals
    {% if is_incremental() %}
    union all
    select * from decided
    {% endif %}
),

final as (
    select
        *,
        {{ run_ts() }} as status_run_at,
        '{{ invocation_id }}' as invocation_id
    from changed
)

select * from final
