{#- Current truth per natural key (event_id, source_system), merged from the
    arrival ledger. Precedence: deletion over correction over original; within a
    kind the later arrival wins (ties: higher ingestion id, then later line; both
    content-derived, so the outcome never depends on landing order),
    so an older arrival never overwrites a newer one, a re-delivered original
    never undoes a correction, and nothing resurrects a deleted event. Every
    touched key counts its versions; superseded arrivals only raise the count.

    Backfill and replay (vars backfill_start / backfill_end): every key with an
    arrival or a row in the window's event dates is recomputed from scratch from
    bronze, read again with the current code (event_arrival_ctes), and only keys
    whose row comes out different are merged, as action backfill or replay. -#}
{{ config(
    unique_key=['event_id', 'source_system'],
    partition_by=['event_date'],
    merge_prune={'target_column': 'event_date', 'source_column': 'previous_event_date',
                 'unlogged': {'column': 'changed_run_at', 'log': 'silver_event_changes'}},
) }}
-- depends_on: {{ ref('stg_bronze_events') }}

{%- set run_hwm = latecomer__high_water_mark('changed_run_at') %}
{%- set window = backfill_window() if is_incremental() else none %}
{#- The columns the change log compares (previous_<column> on each row). #}
{%- set capture_columns = {'event_type': 'string', 'user_id': 'string', 'amount': 'decimal(18, 2)',
                           'event_ts': 'timestamp', 'event_date': 'date', 'is_deleted': 'boolean'} %}
{#- The columns a row takes from its winning arrival. #}
{%- set arrival_columns = ['event_type', 'user_id', 'amount', 'event_ts', 'event_date', 'record_kind', 'precedence',
                           'arrival_ts', 'ingested_at', 'ingestion_id', 'line_number', 'bronze_row_id',
                           'lateness_seconds', 'watermark_tier'] %}
{#- With no new arrival and no release since the last run, the batch is
    planned as empty and Spark reads none of this table's history. #}
{%- set nothing_new = is_incremental() and not window and not latecomer__any_rows(
    "select 1 from " ~ ref('silver_event_arrivals') ~ " where route = 'silver' and ledger_run_at > " ~ run_hwm
    ~ " union all select 1 from " ~ ref('silver_quarantine')
    ~ " where status = 'released' and status_run_at > " ~ run_hwm) %}
{#- Its batch is then empty by construction: the write is skipped without
    spilling or counting it. #}
{%- do latecomer__skip_write('no new arrival or release since the last run') if nothing_new %}
{#- How far silver_event_changes has taken this table
    (macros/silver/change_capture.sql); the MERGE also reads where the rows
    it has not taken yet live (config merge_prune, `unlogged`). #}
{%- set logged_until = none if nothing_new else change_log_high_water_mark() %}

{#- Backfill and replay: the window's rows read again from bronze
    (rederived) and the correction links among them. In a build
    (latecomer__spills_while_rendering), the links' chains are followed a round per
    statement over spilled rows (correction_chain_end_ctes with spilled_from);
    in one query, the plan would hold the whole bronze re-derivation once
    per link-set reference, 64 times. #}
{%- set rederived_ctes %}
bronze_events as (
    select * from {{ ref('stg_bronze_events') }}
),

{{ event_arrival_ctes('bronze_events', 'rederived') }},

eligible as (
    select
        rederived.*,
        {{ run_ts() }} as ledger_run_at,
        '{{ invocation_id }}' as invocation_id,
        false as is_release
    from rederived
    left join {{ ref('silver_quarantine') }} as quarantine
        on rederived.bronze_row_id = quarantine.bronze_row_id
    {#- A row routed to silver and held since (a rejected publication hold,
        an unresolved correction chain) stays out. #}
    where
        rederived.event_ts is not null
        and (
            (rederived.route = 'silver' and quarantine.bronze_row_id is null)
            or quarantine.status = 'released'
        )
),

eligible_links as (
    {{ correction_links('eligible') }}
)
{%- endset %}
{%- set rederived_links_sql = none %}
{%- if window and latecomer__spills_while_rendering() %}
    {%- set rederived_links_sql = 'with ' ~ rederived_ctes ~ ' select * from eligible_links' %}
{%- endif %}

{%- set batch_ctes %}
arrivals as (
    select * from {{ ref('silver_event_arrivals') }}
),

quarantine as (
    select * from {{ ref('silver_quarantine') }}
),

{#- New arrivals routed to silver, but those silver_quarantine holds since
    (on a correction chain that does not resolve). #}
new_arrivals as (
    select
        arrivals.*,
        false as is_release
    from arrivals
    left anti join quarantine
        on arrivals.bronze_row_id = quarantine.bronze_row_id
        and quarantine.status != 'released'
        and quarantine.status_run_at > {{ run_hwm }}
    where
        arrivals.route = 'silver'
        and arrivals.ledger_run_at > {{ run_hwm }}{% if nothing_new %} and false{% endif %}
),

{# Released rows are looked up in the ledger's arrival-date partitions they
    arrived in (the ledger's arrival_date is the date of arrival_ts). #}
released_arrivals as (
    select
        arrivals.*,
        true as is_release
    from quarantine
    inner join arrivals
        on quarantine.bronze_row_id = arrivals.bronze_row_id
        and to_date(quarantine.arrival_ts) = arrivals.arrival_date
    where
        quarantine.status = 'released'
        and quarantine.status_run_at > {{ run_hwm }}
        and arrivals.event_ts is not null{% if nothing_new %}
        and false{% endif %}
),

incremental_candidates as (
    select * from new_arrivals
    union all
    select * from released_arrivals
),

{# A correction may name a superseded correction: silver_correction_chains
    holds where each such chain ends (the original event). -#}
correction_chains as (
    select * from {{ ref('silver_correction_chains') }}
),

incremental_resolved as (
    {{ resolved_through_chains('incremental_candidates', 'correction_chains', 'chain_end_event_id') }}
),

{% if window %}
{{ rederived_ctes }},

{{ resolve_corrections_ctes('eligible', 'eligible_links', 'rederived_resolved', spilled_from=rederived_links_sql) }},

window_keys as (
    select
        resolved_event_id as event_id,
        source_system
    from rederived_resolved
    where event_date between date'{{ window.start }}' and date'{{ window.end }}'
    union
    select
        event_id,
        source_system
    from {{ this }}
    where event_date between date'{{ window.start }}' and date'{{ window.end }}'
),

resolved as (
    select
        incremental_resolved.*,
        false as from_scratch
    from incremental_resolved
    left anti join window_keys
        on incremental_resolved.resolved_event_id = window_keys.event_id
        and incremental_resolved.source_system = window_keys.source_system
    union all
    select
        rederived_resolved.*,
        true as from_scratch
    from rederived_resolved
    left semi join window_keys
        on rederived_resolved.resolved_event_id = window_keys.event_id
        and rederived_resolved.source_system = window_keys.source_system
),
{% else %}
resolved as (
    select
        *,
        false as from_scratch
    from incremental_resolved
),
{% endif %}

ranked as (
    select
        *,
        row_number() over (
            partition by resolved_event_id, source_system
            order by precedence desc, arrival_ts desc, ingestion_id desc, line_number desc
        ) as batch_rank,
        count(*) over (partition by resolved_event_id, source_system) as new_versions,
        min(arrival_ts) over (partition by resolved_event_id, source_system) as batch_first_arrival_ts,
        max(cast(is_release as int)) over (partition by resolved_event_id, source_system) as has_release
    from resolved
),

batch_winners as (
    select * from ranked
    where batch_rank = 1
)
{%- endset %}

{#- The queries below read batch_winners two or three times: in a build it
    is spilled once (latecomer__spilled_cte), since Spark would otherwise run the batch's
    whole derivation at each reading (and, within each, a backfill window's
    re-derivation from bronze three times). #}
{%- set spilled = is_incremental() and not nothing_new and latecomer__spills_while_rendering() %}
{%- if spilled %}
    {%- set batch_ctes = latecomer__spilled_cte(batch_ctes, 'batch_winners') %}
{%- endif %}

{#- The event dates holding the current rows of the batch's keys, found with
    one query over the table's key columns (see `existing`); unspilled, a
    backfill window, whose batch is read again from bronze, finds them in its
    query. #}
{%- set existing_dates_sql %}
select distinct current_keys.event_date
from {{ this }} as current_keys
left semi join batch_winners as key_of_batch
    on current_keys.event_id = key_of_batch.resolved_event_id
    and current_keys.source_system = key_of_batch.source_system
{%- endset %}
{%- set existing_dates = none %}
{%- if is_incremental() and (spilled or not window) and execute and model.resource_type == 'model' %}
    {%- set existing_dates = [] if nothing_new else run_query(
        'with ' ~ batch_ctes ~ ' select cast(event_date as string) from (' ~ existing_dates_sql ~ ')'
    ).columns[0].values() | list %}
{%- endif %}

with {{ batch_ctes }},

{% if is_incremental() %}
{# The current rows of the batch's keys, read from the event-date partitions
    they live in: existing_dates, found before this query (a query over the
    key columns of the whole table) and given as literals, so the scan of
    whole rows is pruned when planned. Without them (a unit test) the dates
    come from a subquery, which Spark does not prune by. #}
existing as (
    select current_rows.*
    from {{ this }} as current_rows
    left semi join batch_winners
        on current_rows.event_id = batch_winners.resolved_event_id
        and current_rows.source_system = batch_winners.source_system
    {%- if existing_dates is not none %}
    where {{ latecomer__in_list('current_rows.event_date', existing_dates, 'date') }}
    {%- else %}
    where current_rows.event_date in ({{ existing_dates_sql }})
    {%- endif %}
),
{% else %}
existing as (
    select
        resolved_event_id as event_id,
        source_system,
        event_type,
        user_id,
        amount,
        event_ts,
        event_date,
        false as is_deleted,
        record_kind,
        precedence,
        arrival_ts,
        ingested_at,
        ingestion_id,
        line_number,
        bronze_row_id,
        arrival_ts as first_arrival_ts,
        lateness_seconds,
        watermark_tier,
        cast(0 as bigint) as version_count,
        {%- for column in capture_columns %}
        cast(null as {{ capture_columns[column] }}) as previous_{{ column }},
        {%- endfor %}
        cast(null as string) as last_action,
        cast(null as string) as change_reason,
        cast(null as timestamp) as changed_run_at
    from batch_winners
    where false
),
{% endif %}

compared as (
    select
        batch_winners.*,
        existing.event_id is not null as is_known,
        batch_winners.from_scratch
        or existing.event_id is null
        or named_struct(
            'precedence', batch_winners.precedence,
            'arrival_ts', batch_winners.arrival_ts,
            'ingestion_id', batch_winners.ingestion_id,
            'line_number', batch_winners.line_number
        ) > named_struct(
            'precedence', existing.precedence,
            'arrival_ts', existing.arrival_ts,
            'ingestion_id', existing.ingestion_id,
            'line_number', existing.line_number
        ) as new_wins,
        existing.event_type as old_event_type,
        existing.user_id as old_user_id,
        existing.amount as old_amount,
        existing.event_ts as old_event_ts,
        existing.event_date as old_event_date,
        existing.is_deleted as old_is_deleted,
        existing.record_kind as old_record_kind,
        existing.precedence as old_precedence,
        existing.arrival_ts as old_arrival_ts,
        existing.ingested_at as old_ingested_at,
        existing.ingestion_id as old_ingestion_id,
        existing.line_number as old_line_number,
        existing.bronze_row_id as old_bronze_row_id,
        existing.first_arrival_ts as old_first_arrival_ts,
        existing.lateness_seconds as old_lateness_seconds,
        existing.watermark_tier as old_watermark_tier,
        existing.version_count as old_version_count,
        {#- A stored row whose change the change log has not taken (a run
            stopped between the two): what the log last saw is its previous
            values, not the row (macros/silver/change_capture.sql). #}
        {{ 'coalesce(existing.changed_run_at > ' ~ logged_until ~ ', false)' if logged_until else 'false' }} as old_unlogged,
        {%- for column in capture_columns %}
        existing.previous_{{ column }} as old_previous_{{ column }},
        {%- endfor %}
        existing.last_action as old_last_action,
        existing.change_reason as old_change_reason
    from batch_winners
    left join existing
        on batch_winners.resolved_event_id = existing.event_id
        and batch_winners.source_system = existing.source_system
),

merged_batch as (
    select
        resolved_event_id as event_id,
        source_system,
        {%- for column in arrival_columns %}
        case when new_wins then {{ column }} else old_{{ column }} end as {{ column }},
        {%- endfor %}
        case when new_wins then record_kind = 'deletion' else old_is_deleted end as is_deleted,
        case
            when from_scratch then batch_first_arrival_ts
            else least(batch_first_arrival_ts, coalesce(old_first_arrival_ts, batch_first_arrival_ts))
        end as first_arrival_ts,
        case when from_scratch then new_versions else coalesce(old_version_count, 0) + new_versions end
            as version_count,
        {%- for column in capture_columns %}
        case when old_unlogged then old_previous_{{ column }} else old_{{ column }} end as previous_{{ column }},
        {%- endfor %}
        case
            when not new_wins and old_unlogged then old_last_action
            when not new_wins then 'duplicate'
            when from_scratch or {{ in_backfill_window('event_date') }} then {{ latecomer__sql_string(backfill_mode()) }}
            when has_release = 1 and is_release then 'quarantine_release'
            when record_kind = 'deletion' then 'deletion'
            when record_kind = 'correction' then 'correction'
            when is_known then 'late_merge'
            when watermark_tier != {{ latecomer__sql_string(var('watermark_tiers')[0]['name']) }} then 'late_merge'
            else 'insert'
        end as last_action,
        case
            when from_scratch or {{ in_backfill_window('event_date') }} then {{ backfill_reason_sql() }}
            when new_wins and record_kind = 'correction' then {{ correction_reason('raw_payload') }}
            when not new_wins and old_unlogged then old_change_reason
        end as change_reason,
        {{ as_of_ts() }} as processed_at,
        {{ run_ts() }} as changed_run_at,
        '{{ invocation_id }}' as invocation_id
    from compared
    {#- A recomputed key whose row comes out as stored is left alone, so that a
        repeated backfill or replay changes nothing. #}
    where not (
        from_scratch
        and bronze_row_id <=> old_bronze_row_id
        and event_type <=> old_event_type
        and user_id <=> old_user_id
        and amount <=> old_amount
        and event_ts <=> old_event_ts
        and (record_kind = 'deletion') <=> old_is_deleted
        and new_versions <=> old_version_count
        and batch_first_arrival_ts <=> old_first_arrival_ts
    )
),

{% if window %}
{#- A key of the window whose every arrival is now rejected (the arrivals
    behind a rejected publication hold, or rows a steward rejected) has no
    row in the batch: it leaves silver as a deletion by the replay, with no
    version left to count. #}
orphaned as (
    select current_rows.*
    from {{ this }} as current_rows
    left anti join batch_winners
        on current_rows.event_id = batch_winners.resolved_event_id
        and current_rows.source_system = batch_winners.source_system
    where
        current_rows.event_date between date'{{ window.start }}' and date'{{ window.end }}'
        and not current_rows.is_deleted
),
{% endif %}

final as (
    select * from merged_batch
    {%- if window %}
    union all
    select
        event_id,
        source_system,
        {%- for column in arrival_columns %}
        {{ column }},
        {%- endfor %}
        true as is_deleted,
        first_arrival_ts,
        cast(0 as bigint) as version_count,
        {%- for column in capture_columns %}
        {{ column }} as previous_{{ column }},
        {%- endfor %}
        {{ latecomer__sql_string(backfill_mode()) }} as last_action,
        {{ backfill_reason_sql() }} as change_reason,
        {{ as_of_ts() }} as processed_at,
        {{ run_ts() }} as changed_run_at,
        '{{ invocation_id }}' as invocation_id
    from orphaned
    {%- endif %}
)

select * from final
