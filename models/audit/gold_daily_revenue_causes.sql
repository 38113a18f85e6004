{#- Why each published version of a gold_daily_revenue row differs from the
    one before it, by cause: one row per row version and cause (action,
    watermark tier, reason), with the events behind it and what they add to
    each measure. The causes of a version sum exactly to its change: the
    data test causes_sum_to_change checks that on every build, and
    `dbt run-operation explain_change` prints it for any two versions.

    A row's version reflects every silver change up to its
    source_changed_run_at, so the changes between two versions are the
    silver change log rows of its partition in between: each adds its new
    values to its event date and takes its old ones from its previous event
    date. When restore_table took the row back, the restore is a cause too:
    whatever the changes in between leave of the change. -#}
{{ config(partition_by=['explained_date']) }}

{%- set moved_ctes %}
{#- Every row, not only those written since this model's last run: a row
    restore_table took back keeps the time it was first written. A few
    hundred rows (dates times sources). #}
gold as (
    select * from {{ ref('gold_daily_revenue') }}
),

explained as (
{%- if is_incremental() %}
        select
            event_date,
            source_system,
            max_by(named_struct(
                'version', to_version, 'orders', orders_after, 'gross_revenue', gross_revenue_after,
                'refunds', refunds_after, 'net_revenue', net_revenue_after,
                'source_changed_run_at', source_changed_run_at
            ), explained_run_at) as last
        from {{ this }}
        group by event_date, source_system
    {%- else %}
        select
            cast(null as date) as event_date,
            cast(null as string) as source_system,
            named_struct(
                'version', 0, 'orders', cast(0 as bigint), 'gross_revenue', cast(0 as decimal(38, 2)),
                'refunds', cast(0 as decimal(38, 2)), 'net_revenue', cast(0 as decimal(38, 2)),
                'source_changed_run_at', cast(null as timestamp)
            ) as last
        where false
{%- endif %}
),

{#- Versions published since this model's last run (a status that moved
    alone keeps the version and the values, and is not a change). -#}
moved as (
    select
        gold.event_date,
        gold.source_system,
        coalesce(explained.last.version, 0) as from_version,
        gold.version as to_version,
        coalesce(explained.last.orders, 0) as orders_before,
        coalesce(explained.last.gross_revenue, 0) as gross_revenue_before,
        coalesce(explained.last.refunds, 0) as refunds_before,
        coalesce(explained.last.net_revenue, 0) as net_revenue_before,
        gold.orders as orders_after,
        gold.gross_revenue as gross_revenue_after,
        gold.refunds as refunds_after,
        gold.net_revenue as net_revenue_after,
        coalesce(explained.last.source_changed_run_at, cast('1900-01-01' as timestamp)) as from_changed_run_at,
        gold.source_changed_run_at,
        gold.changed_run_at as gold_changed_run_at
    from gold
    left join explained
        on gold.event_date = explained.event_date and gold.source_system = explained.source_system
    where not (
        gold.version <=> explained.last.version
        and gold.orders <=> explained.last.orders
        and gold.gross_revenue <=> explained.last.gross_revenue
        and gold.refunds <=> explained.last.refunds
    )
)
{%- endset %}

{#- The oldest change any moved version needs, found first and given as a
    literal, so the change log's scan skips the files before it (without it,
    in a unit test, the bound is a subquery). -#}
{%- set lower_bound = "(select min(from_changed_run_at) from moved)" %}
{%- if execute and model.resource_type == 'model' %}
    {%- set lowest = run_query('with ' ~ moved_ctes ~ ' select cast(min(from_changed_run_at) as string) from moved').columns[0].values()[0] %}
    {%- set lower_bound = "cast('" ~ (lowest or '9999-12-31') ~ "' as timestamp)" %}
{%- endif %}

with {{ moved_ctes }},

changes as (
    select * from {{ ref('silver_event_changes') }}
    where changed_run_at > {{ lower_bound }} and action != 'duplicate'
),

{# Each change as what it adds to its event date and takes from its
    previous one (a deleted event counts nowhere). -#}
effects as (
    select
        changes.event_id,
        changes.source_system,
        changes.action,
        changes.watermark_tier,
        changes.change_reason,
        changes.lateness_seconds,
        changes.changed_run_at,
        side.event_date,
        side.orders,
        side.gross_revenue,
        side.refunds
    from changes
        lateral view inline(array({{ revenue_effect('', '+') }}, {{ revenue_effect('previous_', '-') }})) side
        as event_date, orders, gross_revenue, refunds
    where side.event_date is not null
),

per_event as (
    select
        event_id,
        source_system,
        event_date,
        action,
        watermark_tier,
        change_reason,
        lateness_seconds,
        changed_run_at,
        sum(orders) as orders,
        sum(gross_revenue) as gross_revenue,
        sum(refunds) as refunds
    from effects
    group by event_id, source_system, event_date, action, watermark_tier, change_reason, lateness_seconds, changed_run_at
    having sum(orders) != 0 or sum(gross_revenue) != 0 or sum(refunds) != 0
),

attributed as (
    select
        moved.event_date,
        moved.source_system,
        moved.from_version,
        moved.to_version,
        per_event.action,
        per_event.watermark_tier,
        per_event.change_reason,
        count(distinct per_event.event_id) as events,
        min(per_event.lateness_seconds) as min_lateness_seconds,
        max(per_event.lateness_seconds) as max_lateness_seconds,
        sum(per_event.orders) as orders,
        sum(per_event.gross_revenue) as gross_revenue,
        sum(per_event.refunds) as refunds,
        sum(per_event.gross_revenue) - sum(per_event.refunds) as net_revenue
    from per_event
    inner join moved
        on per_event.event_date = moved.event_date
        and per_event.source_system = moved.source_system
        and per_event.changed_run_at > moved.from_changed_run_at
        and per_event.changed_run_at <= moved.source_changed_run_at
    group by
        moved.event_date, moved.source_system, moved.from_version, moved.to_version,
        per_event.action, per_event.watermark_tier, per_event.change_reason
),

{# What the causes of a step leave of its change. For a version that went
    back, or came back to where it was with other values (restore_table took
    the row back, and a build may have changed it since), that is the
    restore's. A version nothing else explains (never expected) is kept with
    zeros as unexplained, so that the data test causes_sum_to_change names it. #}
left_over as (
    select
        moved.event_date,
        moved.source_system,
        moved.to_version,
        case when moved.to_version <= moved.from_version then 'table_restore' else 'unexplained' end as action,
        cast(null as string) as watermark_tier,
        cast(null as string) as change_reason,
        cast(0 as bigint) as events,
        cast(null as bigint) as min_lateness_seconds,
        cast(null as bigint) as max_lateness_seconds,
        {%- for measure in ['orders', 'gross_revenue', 'refunds', 'net_revenue'] %}
        case
            when moved.to_version <= moved.from_version
                then
                    any_value(moved.{{ measure }}_after) - any_value(moved.{{ measure }}_before)
                    - coalesce(sum(attributed.{{ measure }}), 0)
            else 0
        end as {{ measure }}{% if not loop.last %},{% endif %}
        {%- endfor %}
    from moved
    left join attributed
        on moved.event_date = attributed.event_date
        and moved.source_system = attributed.source_system
        and moved.to_version = attributed.to_version
    group by moved.event_date, moved.source_system, moved.to_version, moved.from_version
    having moved.to_version <= moved.from_version or count(attributed.to_version) = 0
),

causes as (
    select
        event_date,
        source_system,
        to_version,
        action,
        watermark_tier,
        change_reason,
        events,
        min_lateness_seconds,
        max_lateness_seconds,
        orders,
        gross_revenue,
        refunds,
        net_revenue
    from attributed
    union all
    select * from left_over
),

final as (
    select
        moved.event_date,
        moved.source_system,
        moved.from_version,
        moved.to_version,
        causes.action,
        causes.watermark_tier,
        causes.change_reason,
        concat_ws(':', causes.action, causes.watermark_tier, causes.change_reason) as cause,
        causes.events,
        causes.min_lateness_seconds,
        causes.max_lateness_seconds,
        causes.orders,
        causes.gross_revenue,
        causes.refunds,
        causes.net_revenue,
        moved.orders_before,
        moved.gross_revenue_before,
        moved.refunds_before,
        moved.net_revenue_before,
        moved.orders_after,
        moved.gross_revenue_after,
        moved.refunds_after,
        moved.net_revenue_after,
        moved.source_changed_run_at,
        moved.gold_changed_run_at,
        {{ run_ts() }} as explained_run_at,
        to_date({{ run_ts() }}) as explained_date,
        '{{ invocation_id }}' as invocation_id
    from causes
    inner join moved
        on causes.event_date = moved.event_date
        and causes.source_system = moved.source_system
        and causes.to_version = moved.to_version
)

select * from final
