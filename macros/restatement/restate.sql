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
    {%- set stored_columns = ['status', 'version', 'first_published_at', 'last_changed_at', 'restated_on',
                              'restatement_reason', 'is_restated_after_final', 'source_changed_run_at'] -%}
    {#- One pass: every stored row beside its recomputed values (recomputed
        holds rows of impacted partitions only), so the impacted partitions
        and the recomputed rows are each planned once. #}
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
                cast(null as timestamp) as last_changed_at,
                cast(null as timestamp) as restated_on,
                cast(null as string) as restatement_reason,
                cast(null as boolean) as is_restated_after_final,
                cast(null as timestamp) as source_changed_run_at
            from {{ recomputed }}
            where false
        {%- endif %}
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
            {%- for column in stored_columns %}
                old.{{ column }} as old_{{ column }},
            {%- endfor %}
            old.{{ keys[0] }} is not null as existed
        from {{ recomputed }} as fresh
        full outer join stored as old
            on {% for key in keys %}fresh.{{ key }} = old.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
    ),

    judged as (
        select
            cmp.*,
            {{ impacted }}.reasons,
            {{ impacted }}.source_changed_run_at,
            {{ primary_reason(impacted ~ '.reasons') }} as primary_reason,
            {{ partition_status(period_last_day(grain, 'cmp.' ~ partition_column), as_of) }} as new_status,
            {#- A row of an impacted partition whose values changed is
                restated (with period_close adjust, not in a final
                partition); any other stored row is written again only when
                its status moved. #}
            {{ impacted }}.partition_value is not null
            and not (
                {%- for measure in measures %}
                    cmp.{{ measure }} <=> cmp.old_{{ measure }} and
                {%- endfor %}
                true
            )
            {%- if keeps_closed_partitions() %}
                {#- period_close adjust: a final partition keeps its numbers
                    (gold_daily_revenue_adjustments books the change). #}
                and {{ partition_status(period_last_day(grain, 'cmp.' ~ partition_column), as_of) }} != 'final'
            {%- endif %}
            as is_restated
        from cmp
        left join {{ impacted }} on cmp.{{ partition_column }} = {{ impacted }}.partition_value
    )

    select
        {%- for key in keys %} {{ key }},{% endfor %}
        {%- for measure in measures %}
            case when is_restated then {{ measure }} else old_{{ measure }} end as {{ measure }},
        {%- endfor %}
        new_status as status,
        case when is_restated then coalesce(old_version, 0) + 1 else old_version end as version,
        case when is_restated then coalesce(old_first_published_at, {{ as_of }}) else old_first_published_at end
            as first_published_at,
        case when is_restated then {{ as_of }} else old_last_changed_at end as last_changed_at,
        case when is_restated and existed and primary_reason is not null then {{ as_of }}
            else old_restated_on end as restated_on,
        case when is_restated and existed and primary_reason is not null then primary_reason
            else old_restatement_reason end as restatement_reason,
        case when is_restated then coalesce(old_is_restated_after_final, false) or (existed and new_status = 'final')
            else old_is_restated_after_final end as is_restated_after_final,
        case when is_restated then source_changed_run_at else old_source_changed_run_at end as source_changed_run_at,
        {{ run_ts() }} as changed_run_at,
        '{{ invocation_id }}' as invocation_id,
        case when existed then {{ published_values('old_', measures, 'old_status', 'old_version') }} end
            as published_before,
        case when is_restated then coalesce(reasons, cast(array() as array<string>))
            else cast(array() as array<string>) end as change_reasons
    from judged
    where is_restated or (existed and old_status != new_status)
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
