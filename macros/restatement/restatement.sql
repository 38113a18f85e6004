{#- Restatement machinery shared by the gold models.

    changed_partitions(changes, partition_expr, previous_partition_expr, action_column, window_partition_expr)
        SQL selecting one row per partition touched by changes newer than this
        model's high-water mark (source_changed_run_at), plus during a backfill
        or replay every partition of its window (window_partition_expr of the
        window's dates `d`): the partition value, the reasons, and the newest
        change marker consumed.

    restate(recomputed, impacted, keys, measures, partition_column, status)
        SQL comparing the recomputed partitions with the stored ones and
        returning only rows to merge: partitions whose values changed (version
        + 1, restated_on / restatement_reason when the change is a restatement,
        flagged when the partition was already final) and, when status is
        'computed', rows whose live / preliminary / final status moved at as_of.
        Untouched partitions keep their values, restated_on and version. -#}

{% macro restatement_reason(action) -%}
    case {{ action }}
        when 'late_merge' then 'late_arrival'
        when 'insert' then null
        when 'duplicate' then null
        else {{ action }}
    end
{%- endmacro %}

{#- The reason shown when several apply, most significant first. -#}
{% macro primary_reason(reasons) -%}
    case
        {%- for reason in ['deletion', 'correction', 'dimension_change', 'quarantine_release', 'replay', 'backfill', 'late_arrival'] %}
            when array_contains({{ reasons }}, '{{ reason }}') then '{{ reason }}'
        {%- endfor %}
    end
{%- endmacro %}

{% macro changed_partitions(changes, partition_expr='event_date', previous_partition_expr='previous_event_date', action_column='action', window_partition_expr='d') -%}
    {%- set hwm = high_water_mark('source_changed_run_at') -%}
    select
        partition_value,
        collect_set(reason) as reasons,
        max(changed_run_at) as source_changed_run_at
    from (
        select {{ partition_expr }} as partition_value, {{ restatement_reason(action_column) }} as reason, changed_run_at
        from {{ changes }}
        where changed_run_at > {{ hwm }} and {{ action_column }} != 'duplicate'
        union all
        select {{ previous_partition_expr }} as partition_value, {{ restatement_reason(action_column) }} as reason, changed_run_at
        from {{ changes }}
        where changed_run_at > {{ hwm }} and {{ action_column }} != 'duplicate'
        {%- if is_incremental() and backfill_window() %}
        {#- A backfill or replay recomputes every partition of its window
            (restate then writes only the rows whose values changed). #}
        union all
        {{ backfill_window_partitions(window_partition_expr) }}
        {%- endif %}
        {%- if var('restate_lookback_days', none) %}
        {#- Static lookback (what microbatch `lookback` or "re-run the last N days"
            does): every partition of the last N days is recomputed and rewritten
            (see lookback_rewrite in restate) whether or not it changed; changed
            partitions outside the window are still restated. The window is the
            last N days of the model's own partitions when partition_expr is one
            of its columns, else of `changes` (which must then be the whole change
            relation). Off by default; python -m tooling.bench compares it. #}
        {%- set lookback_source = changes %}
        {%- if execute and is_incremental() %}
            {%- set own_columns = adapter.get_columns_in_relation(this) | map(attribute='name') | map('lower') | list %}
            {%- if partition_expr | lower in own_columns %}
                {%- set lookback_source = this %}
            {%- endif %}
        {%- endif %}
        union all
        select distinct {{ partition_expr }} as partition_value, cast(null as string) as reason, cast(null as timestamp) as changed_run_at
        from {{ lookback_source }}
        where {{ partition_expr }} >= date_sub(
            (select max({{ partition_expr }}) from {{ lookback_source }}), {{ var('restate_lookback_days') }} - 1)
        {%- endif %}
    ) as touched
    where partition_value is not null
    group by partition_value
{%- endmacro %}

{% macro restate(recomputed, impacted, keys, measures, partition_column='event_date', status='computed', status_date_expr=none) -%}
    {%- set as_of = as_of_ts() -%}
    {%- set status_date_expr = status_date_expr or 'cmp.' ~ partition_column -%}
    with stored as (
        {%- if is_incremental() %}
            select * from {{ this }}
        {%- else %}
            select
                {%- for key in keys %} {{ key }},{% endfor %}
                {%- for measure in measures %} {{ measure }},{% endfor %}
                {%- if status != 'computed' %} status,{% else %} cast(null as string) as status,{% endif %}
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
            {%- if status != 'computed' %}
                coalesce(fresh.status, old.status) as fresh_status,
            {%- endif %}
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
            {%- if status == 'computed' %}
                {{ partition_status(status_date_expr, as_of) }} as new_status,
            {%- else %}
                cmp.fresh_status as new_status,
            {%- endif %}
            not (
                {%- for measure in measures %}
                    cmp.{{ measure }} <=> cmp.old_{{ measure }} and
                {%- endfor %}
                {% if status == 'computed' %}true{% else %}cmp.fresh_status <=> cmp.old_status{% endif %}
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
                as published_before
        from judged
        where values_changed
    )

    {%- if status == 'computed' and is_incremental() %},

    status_moved as (
        select
            {%- for key in keys %} stored.{{ key }},{% endfor %}
            {%- for measure in measures %} stored.{{ measure }},{% endfor %}
            {{ partition_status('stored.' ~ partition_column, as_of) }} as status,
            stored.version,
            stored.first_published_at,
            stored.last_changed_at,
            stored.restated_on,
            stored.restatement_reason,
            stored.is_restated_after_final,
            stored.source_changed_run_at,
            {{ run_ts() }} as changed_run_at,
            '{{ invocation_id }}' as invocation_id,
            {{ published_values('stored.', measures, 'stored.status', 'stored.version') }} as published_before
        from stored
        left anti join restated
            on {% for key in keys %}stored.{{ key }} = restated.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
        where stored.status != {{ partition_status('stored.' ~ partition_column, as_of) }}
    )
    {%- endif %}

    {%- if var('restate_lookback_days', none) and is_incremental() %},

    {#- Static lookback (restate_lookback_days): a lookback job rewrites every
        partition of its window, changed or not. The stored rows of impacted
        partitions that neither changed nor moved status are written back as
        they are (same values, version and change markers), so the merge
        rewrites those partitions' files as the job would, and nothing else. #}
    lookback_rewrite as (
        select
            stored_impacted.*,
            {{ published_values('stored_impacted.', measures, 'stored_impacted.status', 'stored_impacted.version') }}
                as published_before
        from stored_impacted
        left anti join restated
            on {% for key in keys %}stored_impacted.{{ key }} = restated.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
        {%- if status == 'computed' %}
        left anti join status_moved
            on {% for key in keys %}stored_impacted.{{ key }} = status_moved.{{ key }}{% if not loop.last %} and {% endif %}{% endfor %}
        {%- endif %}
    )
    {%- endif %}

    select * from restated
    {%- if status == 'computed' and is_incremental() %}
        union all
        select * from status_moved
    {%- endif %}
    {%- if var('restate_lookback_days', none) and is_incremental() %}
        union all
        select * from lookback_rewrite
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
