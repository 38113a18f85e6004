{#- Publication holds: partitions the gate keeps as published while the rest publishes.

    The judge is the restated model with a latecomer__publication_gate (gold_daily_revenue):
    step 4 of the restated materialization judges its change
    (publication_gate, gate.sql), and the partitions it finds abnormal are
    left out of its write and logged here. The other restated models whose
    partition is the event date (hourly, by tier) follow the judge's open
    holds: they read the model publication_holds, which runs after the judge,
    and leave the same dates out of their write. The rollups read the daily
    table, so they follow it by construction. Every model adds the dates of
    its open holds, and of holds closed since its last run, to the
    partitions it recomputes (held_partitions), so a held date is judged
    again on every build and published the build it is released.

    The arithmetic and the events (held, judged, cleared, approved,
    rejected, overridden) are python_jobs/core/holds.py. -#}

{% macro latecomer__hold_log_relation() -%}
    {{ return(target.schema ~ '_audit.publication_hold_log') }}
{%- endmacro %}

{% macro latecomer__hold_decisions_relation() -%}
    {{ return(target.schema ~ '_bronze.hold_decisions') }}
{%- endmacro %}


{#- SQL: the current state of every hold, from the hold log and the
    stewards' decisions (columns: models/audit/_audit__models.yml,
    publication_holds). -#}
{% macro latecomer__hold_state_sql(hold_log, hold_decisions) -%}
    with latest_events as (
        {{ latecomer__latest_hold_events_sql(hold_log) }}
    ),

    ranked_decisions as (
        select
            *,
            row_number() over (partition by hold_id order by decided_at desc, decision_id desc) as decision_rank
        from {{ hold_decisions }}
    ),

    latest_decisions as (
        select * from ranked_decisions
        where decision_rank = 1
    )

    select
        latest_events.hold_id,
        latest_events.model,
        latest_events.relation,
        latest_events.partition_value,
        latest_events.group_values,
        case when latest_events.is_open then 'open' else latest_events.event end as state,
        latest_events.checks_fired,
        latest_events.breaches,
        latest_events.published_values,
        latest_events.pending_values,
        latest_events.reasons,
        latest_events.first_held_at,
        latest_events.judged_at as last_judged_at,
        latest_events.logged_run_at as last_judged_run_at,
        case when not latest_events.is_open then latest_events.judged_at end as resolved_at,
        case when not latest_events.is_open then latest_events.logged_run_at end as resolved_run_at,
        latest_events.resolution_reason,
        latest_events.actor as resolved_by,
        case when latest_events.is_open then latest_decisions.decision end as decision,
        case when latest_events.is_open then latest_decisions.reason end as decision_reason,
        case when latest_events.is_open then latest_decisions.actor end as decided_by,
        case when latest_events.is_open then latest_decisions.decided_at end as decided_at
    from latest_events
    left join latest_decisions
        on latest_events.hold_id = latest_decisions.hold_id
        and latest_decisions.decided_at >= latest_events.first_held_at
{%- endmacro %}


{#- SQL: each hold's latest event in `hold_log`, with when the hold was
    first held (first_held_at) and whether that event leaves it open
    (is_open): what publication_holds and held_partitions both read. -#}
{% macro latecomer__latest_hold_events_sql(hold_log) -%}
    select * from (
        select
            *,
            row_number() over (partition by hold_id order by logged_run_at desc) as event_rank,
            min(judged_at) over (partition by hold_id) as first_held_at,
            event in ('held', 'judged') as is_open
        from {{ hold_log }}
    ) as hold_events
    where event_rank = 1
{%- endmacro %}


{#- The judge's view of its holds, from the two tables it reads as sources
    (it runs before the model publication_holds, which follows it). -#}
{% macro latecomer__judged_hold_state() -%}
    ({{ latecomer__hold_state_sql(source('audit_logs', 'publication_hold_log'), source('bronze', 'hold_decisions')) }})
{%- endmacro %}


{#- SQL for changed_partitions: the dates of the holds in `hold_log` that
    are open, or were closed after `hwm`, with the reasons their change was
    recomputed for, and the last run that judged them as the newest change
    they stand for. It reads each hold's latest event from the log alone,
    never the stewards' decisions: the state publication_holds shows, less
    the join with the decisions, which kept Spark from pruning the scan of
    silver_events to the dates it recomputes (its dynamic partition pruning
    gives up on a filter that joins). -#}
{% macro latecomer__held_partitions(hold_log, hwm) -%}
    select
        cast(partition_value as date) as partition_value,
        explode(
            case when reasons is null or reasons = '' then array('late_arrival') else split(reasons, ',') end
        ) as reason,
        logged_run_at as changed_run_at
    from ({{ latecomer__latest_hold_events_sql(hold_log) }}) as latest_events
    where is_open or logged_run_at > {{ hwm }}
{%- endmacro %}


{#- The judge's open holds with any decision on them (agate table), for
    adapter.publication_gate_holds. -#}
{% macro latecomer__open_holds() %}
    {%- set sql -%}
        select hold_id, partition_value, decision, decision_reason, decided_by
        from {{ latecomer__judged_hold_state() }} as holds
        where state = 'open' and model = '{{ model.name }}'
    {%- endset -%}
    {{ return(run_query(sql)) }}
{% endmacro %}


{#- The dates a following model leaves as published: the judge's open holds,
    from the model publication_holds. -#}
{% macro latecomer__followed_holds() %}
    {%- set sql -%}
        select distinct partition_value from {{ ref('publication_holds') }} where state = 'open'
    {%- endset -%}
    {{ return(run_query(sql).columns[0].values() | list) }}
{% endmacro %}


{#- Whether the running restated model follows the judge's holds: it
    depends on the model publication_holds (changed_partitions(holds='follow')). -#}
{% macro latecomer__follows_holds() %}
    {%- for node in model.depends_on.nodes if node.split('.')[-1] == 'publication_holds' -%}
        {{ return(true) }}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}


{#- The spilled rows but those of `held` partitions, as a view; returns its name. -#}
{% macro latecomer__publishable_rows(restated, partition, held) %}
    {%- set view = restated ~ '_publishable' -%}
    {%- call statement('publishable_rows') -%}
        create or replace temporary view {{ view }} as
        select * from {{ restated }}
        where not {{ latecomer__in_list('cast(' ~ partition ~ ' as string)', held) }}
    {%- endcall -%}
    {{ return(view) }}
{% endmacro %}


{#- Appends a build's hold events (adapter.publication_gate_holds) to the hold log. -#}
{% macro latecomer__log_hold_events(target, events) %}
    {%- if not events -%}{{ return(none) }}{%- endif -%}
    {%- do latecomer__stage_for_publication(latecomer__hold_log_relation()) -%}
    {%- call statement('log_hold_events') -%}
        insert into {{ latecomer__hold_log_relation() }}
        values
        {%- for event in events %}
        (
            {{ run_ts() }},
            {{ as_of_ts() }},
            '{{ model.name }}',
            '{{ target }}',
            {{ latecomer__sql_string(event.hold_id) }},
            {{ latecomer__sql_string(event.partition_value) }},
            {{ latecomer__sql_string(event.event) }},
            {{ latecomer__sql_string(event.group_values) }},
            {{ latecomer__sql_string(event.checks_fired) }},
            {{ latecomer__sql_string(event.breaches) if event.breaches else 'cast(null as string)' }},
            {{ latecomer__sql_string(event.published_values) }},
            {{ latecomer__sql_string(event.pending_values) }},
            {{ latecomer__sql_string(event.reasons) }},
            {{ latecomer__sql_string(event.resolution_reason) if event.resolution_reason else 'cast(null as string)' }},
            {{ latecomer__sql_string(event.actor) if event.actor else 'cast(null as string)' }},
            '{{ invocation_id }}'
        ){% if not loop.last %},{% endif %}
        {%- endfor %}
    {%- endcall -%}
    {%- for event in events -%}
        {{ log(model.name ~ ': publication hold ' ~ event.hold_id ~ ' ' ~ event.event ~ ', partition '
            ~ event.partition_value ~ (': ' ~ event.breaches if event.breaches and event.event in ('held', 'judged')
            else (': ' ~ event.resolution_reason if event.resolution_reason else '')), info=true) }}
    {%- endfor -%}
{% endmacro %}


{#- on-run-end: one line saying what the run published and what stays held,
    and the command that decides it (nothing when no hold is open); `holds`:
    latecomer__run_holds(). -#}
{% macro latecomer__report_publication_holds(holds) %}
    {%- if holds is none -%}{{ return(none) }}{%- endif -%}
    {%- set held = [] -%}
    {%- for row in holds.rows if row['state'] == 'open' -%}
        {%- do held.append(row['partition_value'] ~ ' (' ~ row['group_values'] ~ ': ' ~ row['checks_fired'] ~ ')') -%}
    {%- endfor -%}
    {%- if held | length == 0 -%}{{ return(none) }}{%- endif -%}
    {%- set written = run_query("select count(distinct model, partition_value) from " ~ latecomer__manifest_relation()
        ~ " where invocation_id = '" ~ invocation_id ~ "' and change != 'unchanged'").columns[0].values()[0] -%}
    {{ log('Publication holds: ' ~ held | length ~ ' partition(s) held, left as published in every gold model that'
        ~ ' restates them: ' ~ held | join(', ') ~ '; everything else this run computed is published ('
        ~ written ~ ' model partition(s) written). Decide with: python -m python_jobs.landing.steward holds',
        info=true) }}
{% endmacro %}


{#- The holds open after this run or closed by it (agate table), for the
    restatement digest; none before the hold tables exist. -#}
{% macro latecomer__run_holds() %}
    {%- if adapter.get_relation(database=none, schema=target.schema ~ '_audit', identifier='publication_hold_log') is none
           or adapter.get_relation(database=none, schema=target.schema ~ '_bronze', identifier='hold_decisions') is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set sql -%}
        select * from ({{ latecomer__hold_state_sql(latecomer__hold_log_relation(), latecomer__hold_decisions_relation()) }}) as holds
        where state = 'open' or resolved_run_at = {{ run_ts() }}
    {%- endset -%}
    {{ return(run_query(sql)) }}
{% endmacro %}
