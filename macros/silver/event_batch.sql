{#- silver_events' batch, in the steps the model names
    (models/silver/silver_events.sql): what reached silver since its last
    run, resolved through correction chains and ranked per key; in a backfill
    or replay window, the window's keys read again from bronze. Each macro
    returns SQL (CTEs or a query) or answers one question with one query. -#}

{#- Whether anything reached silver after `run_hwm` (a SQL timestamp): an
    arrival the ledger routed to silver, or a quarantined row released. One
    query that stops at the first row. -#}
{% macro silver_has_new_rows(run_hwm) %}
    {{ return(latecomer__any_rows(
        "select 1 from " ~ ref('silver_event_arrivals') ~ " where route = 'silver' and ledger_run_at > " ~ run_hwm
        ~ " union all select 1 from " ~ ref('silver_quarantine')
        ~ " where status = 'released' and status_run_at > " ~ run_hwm)) }}
{% endmacro %}


{#- Backfill and replay: the window's rows read again from bronze with the
    current code (rederived), those silver may take (eligible), and the
    correction links among them (eligible_links). CTEs, without `with`. -#}
{% macro silver_rederived_ctes() -%}
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
{%- endmacro %}


{#- The batch: CTEs, without `with`, ending in batch_winners, each key's
    winning arrival (precedence, then the later arrival) with its batch's
    figures. Incremental: what reached silver after `run_hwm` (none when
    `nothing_new`), resolved through the correction chains. With `window`
    ({start, end}): the window's keys instead come from bronze
    (silver_rederived_ctes), their chains followed over
    `rederived_links_sql` when given (spilled a round per statement). -#}
{% macro silver_batch_ctes(run_hwm, nothing_new, window, rederived_links_sql=none) -%}
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
{{ silver_rederived_ctes() }},

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
{%- endmacro %}


{#- The event dates holding the stored rows of the batch's keys: a query
    over the key columns of the whole table, reading batch_winners. -#}
{% macro silver_batch_key_dates_sql() -%}
select distinct current_keys.event_date
from {{ this }} as current_keys
left semi join batch_winners as key_of_batch
    on current_keys.event_id = key_of_batch.resolved_event_id
    and current_keys.source_system = key_of_batch.source_system
{%- endmacro %}


{#- Those dates, as strings: asked before the query that reads whole rows,
    which then names its partitions as literals and is pruned when planned. -#}
{% macro silver_stored_key_dates(batch_ctes) %}
    {{ return(run_query(
        'with ' ~ batch_ctes ~ ' select cast(event_date as string) from (' ~ silver_batch_key_dates_sql() ~ ')'
    ).columns[0].values() | list) }}
{% endmacro %}
