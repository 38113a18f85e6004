{#- Adjustments booked for closed days (var period_close: adjust;
    macros/restatement/period_close.sql). A final day of gold_daily_revenue
    keeps the numbers it was published with; a change found for it later is
    booked here on the day of as_of (booked_date, an open period),
    referencing the day it belongs to (adjusted_event_date). The rollups add
    the adjustments booked in each of their periods.

    Each run recomputes the closed days touched by silver changes since its
    last booking, and books what their truth differs by from what is already
    accounted for: the published row and the adjustments booked before. So
    a day touched again, or read again, is booked only what is new, for the
    reasons of the changes newer than what is accounted for.
    With period_close restate, and on a first build or --full-refresh, no
    row is booked. Append-only. -#}
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    partition_by=latecomer__month_partitions('booked_date'),
    meta={'test_scope': {'partition': 'booked_date', 'run_column': 'changed_run_at'}},
) }}

-- Read only when booking (the branch below): depends_on: {{ ref('silver_event_changes') }}, {{ ref('silver_events') }}, {{ ref('gold_daily_revenue') }}

{%- set measures = revenue_measure_names() %}

{%- if keeps_closed_partitions() %}

with changes as (
    select * from {{ ref('silver_event_changes') }}
    where changed_run_at > {{ latecomer__high_water_mark('source_changed_run_at') }} and action != 'duplicate'
),

closed as (
    {#- The days touched since the last booking that are final at as_of. #}
    select partition_value as event_date from ({{ changed_partitions('changes') }}) as touched
    where {{ partition_status('partition_value', as_of_ts()) }} = 'final'
),

truth as (
    select
        event_date,
        source_system,
        {{ revenue_measures() }}
    from {{ ref('silver_events') }}
    where not is_deleted and event_date in (select event_date from closed)
    group by event_date, source_system
),

accounted as (
    {#- What is accounted for: the published row and the adjustments booked
        so far, and the newest silver change they reflect. #}
    select
        event_date,
        source_system,
        sum(orders) as orders,
        sum(gross_revenue) as gross_revenue,
        sum(refunds) as refunds,
        sum(net_revenue) as net_revenue,
        max(source_changed_run_at) as accounted_until
    from (
        select event_date, source_system, {{ measures | join(', ') }}, source_changed_run_at
        from {{ ref('gold_daily_revenue') }}
        where event_date in (select event_date from closed)
        union all
        select adjusted_event_date, source_system, {{ measures | join(', ') }}, source_changed_run_at
        from {{ this }}
        where adjusted_event_date in (select event_date from closed)
    ) as booked
    group by event_date, source_system
),

owed as (
    select
        coalesce(truth.event_date, accounted.event_date) as adjusted_event_date,
        coalesce(truth.source_system, accounted.source_system) as source_system,
        coalesce(truth.orders, 0) - coalesce(accounted.orders, 0) as orders,
        coalesce(truth.gross_revenue, 0) - coalesce(accounted.gross_revenue, 0) as gross_revenue,
        coalesce(truth.refunds, 0) - coalesce(accounted.refunds, 0) as refunds,
        coalesce(truth.net_revenue, 0) - coalesce(accounted.net_revenue, 0) as net_revenue,
        accounted.accounted_until
    from truth
    full outer join accounted
        on truth.event_date = accounted.event_date and truth.source_system = accounted.source_system
),

explained as (
    {#- Why: the changes of the day and source not yet accounted for. #}
    select
        owed.adjusted_event_date,
        owed.source_system,
        collect_set({{ restatement_reason('changes.action') }}) as change_reasons,
        max(changes.changed_run_at) as source_changed_run_at
    from owed
    inner join changes
        on owed.source_system = changes.source_system
        and owed.adjusted_event_date in (changes.event_date, changes.previous_event_date)
        and changes.changed_run_at > coalesce(owed.accounted_until, cast('1900-01-01' as timestamp))
    group by owed.adjusted_event_date, owed.source_system
)

select
    cast({{ as_of_ts() }} as date) as booked_date,
    owed.adjusted_event_date,
    owed.source_system,
    cast(owed.orders as bigint) as orders,
    cast(owed.gross_revenue as decimal(28, 2)) as gross_revenue,
    cast(owed.refunds as decimal(28, 2)) as refunds,
    cast(owed.net_revenue as decimal(29, 2)) as net_revenue,
    {{ primary_reason('explained.change_reasons') }} as adjustment_reason,
    coalesce(explained.change_reasons, cast(array() as array<string>)) as change_reasons,
    coalesce(explained.source_changed_run_at, (select max(changed_run_at) from changes)) as source_changed_run_at,
    {{ as_of_ts() }} as booked_at,
    {{ run_ts() }} as changed_run_at,
    '{{ invocation_id }}' as invocation_id
from owed
left join explained
    on owed.adjusted_event_date = explained.adjusted_event_date and owed.source_system = explained.source_system
where not ({% for measure in measures %}owed.{{ measure }} = 0{% if not loop.last %} and {% endif %}{% endfor %})

{%- else %}

{#- Bookings left from period_close adjust: restating the closed days they
    belong to would count them twice in the rollups. #}
{%- if is_incremental() and period_close() == 'restate' and execute and model.resource_type == 'model'
    and latecomer__any_rows('select 1 from ' ~ this) %}
    {{ exceptions.raise_compiler_error(
        "period_close is restate, but " ~ this ~ " holds adjustments booked under period_close adjust: "
        ~ "restating the days they belong to would count them twice in the rollups. Keep period_close: adjust, "
        ~ "or rebuild both with --full-refresh --select gold_daily_revenue+ (every day then holds its truth).") }}
{%- endif %}
{%- do latecomer__skip_write('period_close is ' ~ period_close() ~ ', nothing to book') if is_incremental() %}

select
    cast(null as date) as booked_date,
    cast(null as date) as adjusted_event_date,
    cast(null as string) as source_system,
    cast(null as bigint) as orders,
    cast(null as decimal(28, 2)) as gross_revenue,
    cast(null as decimal(28, 2)) as refunds,
    cast(null as decimal(29, 2)) as net_revenue,
    cast(null as string) as adjustment_reason,
    cast(array() as array<string>) as change_reasons,
    cast(null as timestamp) as source_changed_run_at,
    cast(null as timestamp) as booked_at,
    cast(null as timestamp) as changed_run_at,
    cast(null as string) as invocation_id
where false

{%- endif %}
