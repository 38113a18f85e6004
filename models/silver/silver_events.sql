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
    whose row comes out different are merged, as action backfill or replay.

    Steps, each named below:
      0. what the SQL depends on: the last run's high-water mark, the
         backfill window, whether anything reached silver since
         (silver_has_new_rows), how far the change log has taken this table;
      1. the batch (silver_batch_ctes, macros/silver/event_batch.sql): each
         key's winning arrival, spilled once in a build;
      2. where the batch's keys are stored (silver_stored_key_dates);
      3. the query: existing (their stored rows), compared, merged_batch
         (the row each key keeps), orphaned (a window's keys left without
         an arrival), final. -#}
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
{#- Step 0, what this run's SQL depends on, each one named question: with
    no new arrival and no release since the last run, the batch is planned
    as empty and the write is skipped without spilling or counting it. #}
{%- set nothing_new = is_incremental() and not window and not silver_has_new_rows(run_hwm) %}
{%- do latecomer__skip_write('no new arrival or release since the last run') if nothing_new %}
{#- How far silver_event_changes has taken this table
    (macros/silver/change_capture.sql); the MERGE also reads where the rows
    it has not taken yet live (config merge_prune, `unlogged`). #}
{%- set logged_until = none if nothing_new else change_log_high_water_mark() %}

{#- Step 1, the batch (macros/silver/event_batch.sql). In a build
    (latecomer__spills_while_rendering), a backfill window's correction
    chains are followed a round per statement over spilled links
    (correction_chain_end_ctes with spilled_from): in one query, the plan
    would hold the whole bronze re-derivation once per link-set reference,
    64 times. #}
{%- set rederived_links_sql = none %}
{%- if window and latecomer__spills_while_rendering() %}
    {%- set rederived_links_sql = 'with ' ~ silver_rederived_ctes() ~ ' select * from eligible_links' %}
{%- endif %}
{%- set batch_ctes = silver_batch_ctes(run_hwm, nothing_new, window, rederived_links_sql) %}

{#- The queries below read batch_winners two or three times: in a build it
    is spilled once (latecomer__spilled_cte), since Spark would otherwise run the batch's
    whole derivation at each reading (and, within each, a backfill window's
    re-derivation from bronze three times). #}
{%- set spilled = is_incremental() and not nothing_new and latecomer__spills_while_rendering() %}
{%- if spilled %}
    {%- set batch_ctes = latecomer__spilled_cte(batch_ctes, 'batch_winners') %}
{%- endif %}

{#- Step 2, where the batch's keys are stored: their event dates, found
    before the query (silver_stored_key_dates); unspilled, a backfill window,
    whose batch is read again from bronze, finds them in its query. #}
{%- set existing_dates = none %}
{%- if is_incremental() and (spilled or not window) and execute and model.resource_type == 'model' %}
    {%- set existing_dates = [] if nothing_new else silver_stored_key_dates(batch_ctes) %}
{%- endif %}

{#- Step 3, the query: each batch winner compared with the stored row of its
    key, and the row the key keeps. #}
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
    where current_rows.event_date in ({{ silver_batch_key_dates_sql() }})
    {%- endif %}
),
{% else %}
{#- A first build: nothing stored, the stored rows' columns. #}
existing as (
    select
        resolved_event_id as event_id,
        source_system,
        {%- for column in arrival_columns %}
        {{ column }},
        {%- endfor %}
        false as is_deleted,
        arrival_ts as first_arrival_ts,
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
        {%- for column in arrival_columns + ['is_deleted', 'first_arrival_ts', 'version_count'] %}
        existing.{{ column }} as old_{{ column }},
        {%- endfor %}
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
