{#- Which recomputed rows a restated gold model writes.

    restate(recomputed, impacted, keys, measures, partition_column, grain)
        SQL comparing the recomputed partitions with the stored ones and
        returning only rows to merge: partitions whose values changed (version
        + 1, restated_on / restatement_reason when the change is a restatement,
        flagged when the partition was already final; with period_close
        adjust, final partitions keep their values: macros/restatement/
        period_close.sql) and rows whose live /
        preliminary / final status moved at as_of. A partition is a period of
        `grain` (day, week, month, quarter, year) starting at its
        partition_column; its status is its last day's (period_last_day): a
        period is no more settled than the latest day it will hold, whether
        or not that day has rows yet.
        Each row also carries published_before (its published values) and
        change_reasons (every reason its partition was recomputed for), which
        the gate and the change manifest read and the table does not hold.
        Untouched partitions keep their values, restated_on and version. -#}

{% macro restate(recomputed, impacted, keys, measures, partition_column='event_date', grain='day') -%}
    {%- set as_of = as_of_ts() -%}
    with stored as (
        {%- if is_incremental() %}
            select * from {{ this }}
        {%- else %}
            select
                {%- for key in keys %} {{ key }},{% endfor %}
                {%- for measure in measures %} {{ measure }},{% endfor %}
                cast(null as string) as status,
                cast(null as int) as version,
                cast(null as timestamp) as first_published_at,
                cast(null as timestamp) as restated_on,
                cast(null as string) as restatement_reason,
                cast(null as boolean) as is_restated_after_final
            from {{ recomputed }}
            where false
        {%- endif %}
    ),

    stored_impacted as (
        select stored.* from stored
        left semi join {{ impacted }} on stored.{{ partition_column }} = {{ impacted }}.partition_value
    ),

    cmp as (
        select
            {%- for key in keys %}
                coalesce(fresh.{{ key }}, old.{{ key }}) as {{ key }},
            {%- endfor %}
            {%- for measure in measures %}
                coalesce(fresh.{{ measure }}, 0) as {{ measure }},
                old.{{ measure }} as old_{{ measure }},
            {%- endfor %}
            old.status as old_status,
            old.{{ keys[0] }} is not null as existed,
            old.version as old_version,
            old.first_published_at as old_first_published_at,
            old.restated_on as old_restated_on,
            old.restatement_reason as old_restatement_reason,
            old.is_restated_after_final as old_is_restated_after_final
        from {{ recomputed }} as fresh
        full outer join stored_impacted as old
            on {% for key in keys %}fresh.{{ key }} = old.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
    ),

    judged as (
        select
            cmp.*,
            {{ impacted }}.reasons,
            {{ impacted }}.source_changed_run_at,
            {{ partition_status(period_last_day(grain, 'cmp.' ~ partition_column), as_of) }} as new_status,
            not (
                {%- for measure in measures %}
                    cmp.{{ measure }} <=> cmp.old_{{ measure }} and
                {%- endfor %}
                true
            ) as values_changed
        from cmp
        inner join {{ impacted }} on cmp.{{ partition_column }} = {{ impacted }}.partition_value
    ),

    restated as (
        select
            {%- for key in keys %} {{ key }},{% endfor %}
            {%- for measure in measures %} {{ measure }},{% endfor %}
            new_status as status,
            coalesce(old_version, 0) + 1 as version,
            coalesce(old_first_published_at, {{ as_of }}) as first_published_at,
            {{ as_of }} as last_changed_at,
            case when existed and {{ primary_reason('reasons') }} is not null then {{ as_of }} else old_restated_on end
                as restated_on,
            case when existed and {{ primary_reason('reasons') }} is not null then {{ primary_reason('reasons') }}
                else old_restatement_reason end as restatement_reason,
            coalesce(old_is_restated_after_final, false) or (existed and new_status = 'final')
                as is_restated_after_final,
            source_changed_run_at,
            {{ run_ts() }} as changed_run_at,
            '{{ invocation_id }}' as invocation_id,
            case when existed then {{ published_values('old_', measures, 'old_status', 'old_version') }} end
                as published_before,
            coalesce(reasons, cast(array() as array<string>)) as change_reasons
        from judged
        where values_changed
        {%- if keeps_closed_partitions() %}
            {#- period_close adjust: a final partition keeps its numbers
                (gold_daily_revenue_adjustments books the change). #}
            and new_status != 'final'
        {%- endif %}
    )

    {%- if is_incremental() %},

    status_moved as (
        select
            {%- for key in keys %} stored.{{ key }},{% endfor %}
            {%- for measure in measures %} stored.{{ measure }},{% endfor %}
            {{ partition_status(period_last_day(grain, 'stored.' ~ partition_column), as_of) }} as status,
            stored.version,
            stored.first_published_at,
            stored.last_changed_at,
            stored.restated_on,
            stored.restatement_reason,
            stored.is_restated_after_final,
            stored.source_changed_run_at,
            {{ run_ts() }} as changed_run_at,
            '{{ invocation_id }}' as invocation_id,
            {{ published_values('stored.', measures, 'stored.status', 'stored.version') }} as published_before,
            cast(array() as array<string>) as change_reasons
        from stored
        left anti join restated
            on {% for key in keys %}stored.{{ key }} = restated.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
        where stored.status != {{ partition_status(period_last_day(grain, 'stored.' ~ partition_column), as_of) }}
    )
    {%- endif %}

    select * from restated
    {%- if is_incremental() %}
        union all
        select * from status_moved
    {%- endif %}
{%- endmacro %}

{#- SQL: a gold row's published values (measures, status, row version) as one
    struct, `published_before` in restate's output: what the gate and the change
    manifest compare the new values with. -#}
{% macro published_values(measure_prefix, measures, status_expr, version_expr) -%}
    named_struct(
        {%- for measure in measures %}
        '{{ measure }}', {{ measure_prefix }}{{ measure }},
        {%- endfor %}
        'status', {{ status_expr }},
        'version', {{ version_expr }}
    )
{%- endmacro %}
