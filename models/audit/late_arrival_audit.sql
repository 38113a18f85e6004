{#- Append-only audit of every late merge, correction, deletion, quarantine,
    quarantine release, backfill, replay, dimension change, publication gate
    decision, publication hold (held, cleared, approved, rejected, overridden)
    and table restore, written in the run that made it (or, for a decision that
    blocked this model's inputs, in the next run that builds it);
    never rebuilt (full_refresh: false). A run with nothing new adds no row. -#}
{{ config(partition_by=['recorded_date']) }}

{%- set hwm = latecomer__high_water_mark('recorded_run_at') %}

{#- The rows each kind of record below starts from, since the last run:
    when none has a row, the run records nothing and its write is skipped. #}
{%- set record_sources %}
silver_changes as (
    select * from {{ ref('silver_event_changes') }}
    where
        changed_run_at > {{ hwm }}
        and action in ('late_merge', 'correction', 'deletion', 'quarantine_release', 'backfill', 'replay')
),

quarantine as (
    select * from {{ ref('silver_quarantine') }}
),

quarantined as (
    select * from quarantine
    where status_run_at > {{ hwm }} and status = 'quarantined'
),

dimension_changes as (
    select * from {{ ref('gold_revenue_by_tier_changes') }}
    where changed_run_at > {{ hwm }}
),

gate_decisions as (
    select * from {{ source('audit_logs', 'publication_gate_log') }}
    where logged_run_at > {{ hwm }}
),

hold_events as (
    select * from {{ source('audit_logs', 'publication_hold_log') }}
    where logged_run_at > {{ hwm }} and event != 'judged'
),

restores as (
    select * from {{ source('audit_logs', 'table_restores') }}
    {#- Restores are stamped with the wall clock; one made while this run is
        going is left for the next run, which would otherwise see it again. #}
    where restored_at > {{ hwm }} and restored_at <= {{ run_ts() }}
),

daily_after_final as (
    select * from {{ ref('gold_daily_revenue') }}
    where changed_run_at > {{ hwm }} and is_restated_after_final and restated_on = last_changed_at
)
{%- endset %}
{%- do latecomer__skip_write('nothing to record since the last run') if is_incremental() and not latecomer__any_rows(
    'with ' ~ record_sources ~ ' select 1 from silver_changes union all select 1 from quarantined'
    ~ ' union all select 1 from dimension_changes union all select 1 from gate_decisions'
    ~ ' union all select 1 from hold_events union all select 1 from restores union all select 1 from daily_after_final') %}

with {{ record_sources }},

silver_records as (
    select
        silver_changes.action,
        silver_changes.event_id,
        silver_changes.source_system,
        to_json(named_struct(
            'event_type', silver_changes.previous_event_type, 'user_id', previous_user_id, 'amount', previous_amount,
            'event_ts', silver_changes.previous_event_ts, 'is_deleted', previous_is_deleted
        )) as before_values,
        to_json(named_struct(
            'event_type', silver_changes.event_type, 'user_id', silver_changes.user_id, 'amount', amount,
            'event_ts', silver_changes.event_ts, 'is_deleted', silver_changes.is_deleted
        )) as after_values,
        case
            when silver_changes.action = 'quarantine_release'
                then concat('released by ', quarantine.decided_by, ': ', quarantine.decision_reason)
            when silver_changes.action in ('backfill', 'replay') then silver_changes.change_reason
            else concat(
                silver_changes.record_kind, ' arrived ', cast(silver_changes.lateness_seconds as string),
                's late (tier ', silver_changes.watermark_tier, ')',
                coalesce(concat(': ', silver_changes.change_reason), '')
            )
        end as reason,
        silver_changes.event_ts,
        silver_changes.arrival_ts,
        array_distinct(filter(
            array(
                cast(silver_changes.event_date as string),
                cast(silver_changes.previous_event_date as string)
            ),
            partition_date -> partition_date is not null
        )) as impacted_partitions,
        silver_changes.bronze_row_id,
        silver_changes.changed_run_at as source_run_at
    from silver_changes
    left join quarantine on silver_changes.bronze_row_id = quarantine.bronze_row_id
),

quarantine_records as (
    select
        'quarantine' as action,
        coalesce(event_key, event_id) as event_id,
        source_system,
        cast(null as string) as before_values,
        raw_payload as after_values,
        quarantine_reason as reason,
        event_ts,
        arrival_ts,
        array() as impacted_partitions,
        bronze_row_id,
        status_run_at as source_run_at
    from quarantined
),

restatement_records as (
    select
        'restatement_after_final' as action,
        cast(null as string) as event_id,
        source_system,
        cast(null as string) as before_values,
        to_json(named_struct(
            'orders', orders, 'gross_revenue', gross_revenue, 'refunds', refunds,
            'net_revenue', net_revenue, 'version', version
        )) as after_values,
        concat('final partition restated: ', restatement_reason) as reason,
        cast(null as timestamp) as event_ts,
        cast(null as timestamp) as arrival_ts,
        array(cast(event_date as string)) as impacted_partitions,
        cast(null as string) as bronze_row_id,
        changed_run_at as source_run_at
    from daily_after_final
),

dimension_records as (
    select
        'dimension_change' as action,
        customer_id as event_id,
        'customers' as source_system,
        before_values,
        after_values,
        reason,
        changed_from as event_ts,
        cast(null as timestamp) as arrival_ts,
        transform(impacted_event_dates, event_date -> cast(event_date as string)) as impacted_partitions,
        cast(null as string) as bronze_row_id,
        changed_run_at as source_run_at
    from dimension_changes
),

gate_records as (
    select
        'publication_gate' as action,
        model as event_id,
        cast(null as string) as source_system,
        checks as before_values,
        decision as after_values,
        concat(
            decision, ': ', breaches,
            case when override_reason is not null then concat(' (override: ', override_reason, ')') else '' end
        ) as reason,
        cast(null as timestamp) as event_ts,
        cast(null as timestamp) as arrival_ts,
        array() as impacted_partitions,
        cast(null as string) as bronze_row_id,
        logged_run_at as source_run_at
    from gate_decisions
),

hold_records as (
    select
        'publication_hold' as action,
        hold_id as event_id,
        group_values as source_system,
        published_values as before_values,
        pending_values as after_values,
        concat(
            event, coalesce(concat(' by ', actor), ''), ': ', coalesce(resolution_reason, breaches, ''),
            ' (', model, ')'
        ) as reason,
        cast(null as timestamp) as event_ts,
        cast(null as timestamp) as arrival_ts,
        array(partition_value) as impacted_partitions,
        cast(null as string) as bronze_row_id,
        logged_run_at as source_run_at
    from hold_events
),

restore_records as (
    select
        'table_restore' as action,
        model as event_id,
        cast(null as string) as source_system,
        to_json(named_struct('version', from_version)) as before_values,
        to_json(named_struct('version', to_version, 'selector', selector)) as after_values,
        concat('restored ', relation, ' to version ', to_version, ': ', reason) as reason,
        cast(null as timestamp) as event_ts,
        cast(null as timestamp) as arrival_ts,
        array() as impacted_partitions,
        cast(null as string) as bronze_row_id,
        restored_at as source_run_at
    from restores
),

unioned as (
    select * from silver_records
    union all
    select * from dimension_records
    union all
    select * from gate_records
    union all
    select * from hold_records
    union all
    select * from restore_records
    union all
    select * from quarantine_records
    union all
    select * from restatement_records
),

final as (
    select
        sha2(
            concat_ws(
                '|',
                action,
                source_system,
                coalesce(event_id, ''),
                coalesce(bronze_row_id, ''),
                cast(source_run_at as string),
                array_join(impacted_partitions, ',')
            ),
            256
        ) as audit_id,
        action,
        event_id,
        source_system,
        before_values,
        after_values,
        reason,
        {{ latecomer__sql_string(var('actor')) }} as actor,
        '{{ invocation_id }}' as invocation_id,
        event_ts,
        arrival_ts,
        impacted_partitions,
        bronze_row_id,
        {{ as_of_ts() }} as recorded_at,
        {{ run_ts() }} as recorded_run_at,
        to_date({{ run_ts() }}) as recorded_date
    from unioned
)

select * from final
