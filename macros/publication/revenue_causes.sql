{#- "Why did this number change?" for a restated revenue model: the body of
    its causes model (models/audit/*_causes.sql).

    {% call(lower_bound) revenue_causes(gold, keys) %} contributions {% endcall %}

    For each published version of a gold row since this model's last run (a
    *step*: a status that moved alone keeps the version and the values, and is
    not one), one row per cause: action, watermark tier and reason, the events
    behind it, and what it adds to each revenue measure, beside the row's
    values before and after the step.

    `gold` is a select of the gold rows: `keys`, version, the four measures,
    source_changed_run_at (the position of the model's inputs the version
    reflects) and changed_run_at. The call block is the select of the
    model's *contributions*: per `keys`, action, watermark_tier,
    change_reason and position (changed_run_at), the events, their least and
    greatest lateness and what they add to orders, gross_revenue and refunds.
    It reads only positions after `lower_bound`, a SQL timestamp: the oldest
    position any step starts from. A step's causes are the contributions to
    its row after the position it starts from, up to the one it reflects:
    - window 'source': positions in the inputs' change log; a step starts
      from its previous version's source_changed_run_at and ends at its own;
    - window 'explained': positions are times this model's inputs were
      explained (a rollup's days, explained in the same run before it); a
      step takes every contribution since the model's last explanation of
      the row, since the version reflects everything explained up to now.

    Whatever the causes leave of a step's change is kept as one more cause:
    table_restore when the version went back or came back with other values
    (restore_table took the row back); otherwise unexplained, with zeros, so
    that the data test causes_sum_to_change names the step. -#}
{% macro revenue_causes(gold, keys, window='source') -%}
    {%- set measures = revenue_measure_names() -%}
    {%- set on_keys -%}
        {%- for key in keys %}{{ 'and ' if not loop.first }}{left}.{{ key }} = {right}.{{ key }} {% endfor -%}
    {%- endset -%}
    {%- set moved_ctes %}
    {#- Every row, not only those written since this model's last run: a row
        restore_table took back keeps the time it was first written. #}
    gold as (
        {{ gold }}
    ),

    explained as (
        select
            {{ keys | join(', ') }},
            max_by(named_struct(
                'version', to_version, 'orders', orders_after, 'gross_revenue', gross_revenue_after,
                'refunds', refunds_after, 'net_revenue', net_revenue_after,
                'source_changed_run_at', source_changed_run_at, 'explained_run_at', explained_run_at
            ), explained_run_at) as last
        {%- if is_incremental() %}
            from {{ this }}
        {%- else %}
            from (
                select
                    {%- for key in keys %} gold.{{ key }},{% endfor %}
                    0 as to_version,
                    {%- for measure in measures %} cast(0 as {{ 'bigint' if measure == 'orders' else 'decimal(38, 2)' }}) as {{ measure }}_after,{% endfor %}
                    cast(null as timestamp) as source_changed_run_at,
                    cast(null as timestamp) as explained_run_at
                from gold
                where false
            )
        {%- endif %}
        group by {{ keys | join(', ') }}
    ),

    moved as (
        select
            {%- for key in keys %} gold.{{ key }},{% endfor %}
            coalesce(explained.last.version, 0) as from_version,
            gold.version as to_version,
            {%- for measure in measures %}
                coalesce(explained.last.{{ measure }}, 0) as {{ measure }}_before,
                gold.{{ measure }} as {{ measure }}_after,
            {%- endfor %}
            {%- if window == 'source' %}
                coalesce(explained.last.source_changed_run_at, cast('1900-01-01' as timestamp)) as from_position,
                gold.source_changed_run_at as to_position,
            {%- else %}
                coalesce(explained.last.explained_run_at, cast('1900-01-01' as timestamp)) as from_position,
                cast('9999-12-31' as timestamp) as to_position,
            {%- endif %}
            gold.source_changed_run_at,
            gold.changed_run_at as gold_changed_run_at
        from gold
        left join explained
            on {{ on_keys | replace('{left}', 'gold') | replace('{right}', 'explained') }}
        where not (
            gold.version <=> explained.last.version
            {%- for measure in measures if measure != 'net_revenue' %}
                and gold.{{ measure }} <=> explained.last.{{ measure }}
            {%- endfor %}
        )
    )
    {%- endset %}

    {#- Nothing this model reads moved since its last run, which explained
        every step up to then (config skip_if_inputs_unchanged: the
        incremental materialization then writes nothing): no row can have
        moved, so nothing is spilled or asked. -#}
    {%- set unchanged = latecomer__skips_unchanged_inputs() %}

    {#- The model's query reads `moved` four times and the bound's query once
        more, each time a scan of gold and of every explanation so far: in a
        build, it is spilled once. -#}
    {%- if not unchanged %}
        {%- set moved_ctes = latecomer__spilled_cte(moved_ctes, 'moved') %}
    {%- endif %}

    {#- The oldest position any step starts from, found first and given as a
        literal, so the inputs' scans skip the files before it (in a unit
        test, the bound is a subquery); none when no row moved. -#}
    {%- set lower_bound = "(select min(from_position) from moved)" %}
    {%- set lowest = none %}
    {%- if execute and model.resource_type == 'model' and not unchanged %}
        {%- set lowest = run_query('with ' ~ moved_ctes ~ ' select cast(min(from_position) as string) from moved').columns[0].values()[0] %}
        {%- set lower_bound = "cast('" ~ (lowest or '9999-12-31') ~ "' as timestamp)" %}
        {#- Nothing moved since the last run (a build with nothing new): the
            append writes nothing and its tests run no query. #}
        {%- do latecomer__skip_write('no gold row has a new version to explain') if lowest is none and is_incremental() %}
    {%- endif %}

    {#- Contributions matched to steps: the query reads them twice (the
        causes, and what they leave of each step), so in a build they are
        spilled once too, when a row moved. -#}
    {%- set attributed_ctes -%}
    contributions as (
        {{ caller(lower_bound) }}
    ),

    attributed as (
        select
            {%- for key in keys %} moved.{{ key }},{% endfor %}
            moved.from_version,
            moved.to_version,
            contributions.action,
            contributions.watermark_tier,
            contributions.change_reason,
            sum(contributions.events) as events,
            min(contributions.min_lateness_seconds) as min_lateness_seconds,
            max(contributions.max_lateness_seconds) as max_lateness_seconds,
            sum(contributions.orders) as orders,
            sum(contributions.gross_revenue) as gross_revenue,
            sum(contributions.refunds) as refunds,
            sum(contributions.gross_revenue) - sum(contributions.refunds) as net_revenue
        from contributions
        inner join moved
            on {{ on_keys | replace('{left}', 'contributions') | replace('{right}', 'moved') }}
            and contributions.changed_run_at > moved.from_position
            and contributions.changed_run_at <= moved.to_position
        group by
            {%- for key in keys %} moved.{{ key }},{% endfor %}
            moved.from_version, moved.to_version,
            contributions.action, contributions.watermark_tier, contributions.change_reason
    )
    {%- endset %}
    {%- if latecomer__spills_while_rendering() and lowest is not none %}
        {%- set attributed_ctes = latecomer__spilled_cte(moved_ctes ~ ', ' ~ attributed_ctes, 'attributed') %}
    {%- endif %}

    with {{ moved_ctes }},

    {{ attributed_ctes }},

    left_over as (
        select
            {%- for key in keys %} moved.{{ key }},{% endfor %}
            moved.from_version,
            moved.to_version,
            case when moved.to_version <= moved.from_version then 'table_restore' else 'unexplained' end as action,
            cast(null as string) as watermark_tier,
            cast(null as string) as change_reason,
            cast(0 as bigint) as events,
            cast(null as bigint) as min_lateness_seconds,
            cast(null as bigint) as max_lateness_seconds,
            {%- for measure in measures %}
                case
                    when moved.to_version <= moved.from_version
                        then
                            any_value(moved.{{ measure }}_after) - any_value(moved.{{ measure }}_before)
                            - coalesce(sum(attributed.{{ measure }}), 0)
                    else 0
                end as {{ measure }}{{ ',' if not loop.last }}
            {%- endfor %}
        from moved
        left join attributed
            on {{ on_keys | replace('{left}', 'moved') | replace('{right}', 'attributed') }}
            and moved.to_version = attributed.to_version
        group by {% for key in keys %}moved.{{ key }}, {% endfor %}moved.to_version, moved.from_version
        having moved.to_version <= moved.from_version or count(attributed.to_version) = 0
    ),

    {#- One row per cause of a step. A rollup's contributions are its days'
        causes, so a day's table_restore (after a --full-refresh, versions go
        back too) and the rollup's own left over are the same cause. #}
    causes as (
        select
            {%- for key in keys %} {{ key }},{% endfor %}
            to_version,
            action,
            watermark_tier,
            change_reason,
            sum(events) as events,
            min(min_lateness_seconds) as min_lateness_seconds,
            max(max_lateness_seconds) as max_lateness_seconds,
            {%- for measure in measures %} sum({{ measure }}) as {{ measure }}{{ ',' if not loop.last }}{% endfor %}
        from (
            select * from attributed
            union all
            select * from left_over
        ) as step_causes
        group by {% for key in keys %}{{ key }}, {% endfor %}to_version, action, watermark_tier, change_reason
    )

    select
        {%- for key in keys %} moved.{{ key }},{% endfor %}
        moved.from_version,
        moved.to_version,
        causes.action,
        causes.watermark_tier,
        causes.change_reason,
        concat_ws(':', causes.action, causes.watermark_tier, causes.change_reason) as cause,
        causes.events,
        causes.min_lateness_seconds,
        causes.max_lateness_seconds,
        {%- for measure in measures %} causes.{{ measure }},{% endfor %}
        {%- for measure in measures %} moved.{{ measure }}_before,{% endfor %}
        {%- for measure in measures %} moved.{{ measure }}_after,{% endfor %}
        moved.source_changed_run_at,
        moved.gold_changed_run_at,
        {{ run_ts() }} as explained_run_at,
        to_date({{ run_ts() }}) as explained_date,
        '{{ invocation_id }}' as invocation_id
    from causes
    inner join moved
        on {{ on_keys | replace('{left}', 'causes') | replace('{right}', 'moved') }}
        and causes.to_version = moved.to_version
{%- endmacro %}

{#- The contributions of silver changes (the change log's rows after
    `lower_bound`, duplicates aside), one event at a time: each change adds its
    values to its row and takes its previous values from the row they counted
    in (a deleted or absent side counts nowhere). `changes` is a relation or
    CTE of change log rows; `sides` maps each key to its SQL for the new and
    the previous values: {key: [new, previous]}. An event whose change nets
    to zero on a row (it moved within it) is no contribution there. -#}
{% macro silver_change_contributions(changes, sides, lower_bound) -%}
    {%- set keys = sides.keys() | list -%}
    {%- set new, previous = {}, {} -%}
    {%- for key in keys -%}
        {%- do new.update({key: sides[key][0]}) -%}
        {%- do previous.update({key: sides[key][1]}) -%}
    {%- endfor %}
    select
        {%- for key in keys %} {{ key }},{% endfor %}
        action,
        watermark_tier,
        change_reason,
        changed_run_at,
        count(*) as events,
        min(lateness_seconds) as min_lateness_seconds,
        max(lateness_seconds) as max_lateness_seconds,
        sum(orders) as orders,
        sum(gross_revenue) as gross_revenue,
        sum(refunds) as refunds
    from (
        select
            changes.event_id,
            changes.source_system as event_source_system,
            changes.action,
            changes.watermark_tier,
            changes.change_reason,
            changes.lateness_seconds,
            changes.changed_run_at,
            {%- for key in keys %} side.{{ key }},{% endfor %}
            sum(side.orders) as orders,
            sum(side.gross_revenue) as gross_revenue,
            sum(side.refunds) as refunds
        from {{ changes }} as changes
            lateral view inline(array({{ revenue_effect('', '+', new) }}, {{ revenue_effect('previous_', '-', previous) }})) side
        where changes.changed_run_at > {{ lower_bound }} and changes.action != 'duplicate' and side.counts
        group by
            changes.event_id, changes.source_system, changes.action, changes.watermark_tier, changes.change_reason,
            changes.lateness_seconds, changes.changed_run_at
            {%- for key in keys %}, side.{{ key }}{% endfor %}
        having sum(side.orders) != 0 or sum(side.gross_revenue) != 0 or sum(side.refunds) != 0
    ) as per_event
    group by {% for key in keys %}{{ key }}, {% endfor %}action, watermark_tier, change_reason, changed_run_at
{%- endmacro %}
