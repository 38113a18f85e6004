{#- Which partitions a run of a restated gold model must recompute.

    changed_partitions(changes, partition_expr, previous_partition_expr, action_column, window_partition_expr)
        SQL selecting one row per partition touched by changes newer than this
        model's high-water mark (source_changed_run_at), plus during a backfill
        or replay every partition of its window (window_partition_expr of the
        window's dates `d`): the partition value, the reasons, and the newest
        change marker consumed. A change counts in its partition and in its
        previous one (a correction that moved an event to another date); a
        rollup, whose two are the same expression, reads its changes once.
        With `holds`, 'judge' (the model with the publication gate) or
        'follow' (a model leaving the judge's holds as published, which then
        runs after the model publication_holds), the dates of open holds and
        of holds closed since the high-water mark count too, with the reasons
        their change was held for, read from the hold log
        (adapter/dbt/include/latecomer/macros/publication/holds.sql). -#}

{% macro changed_partitions(changes, partition_expr='event_date', previous_partition_expr='previous_event_date', action_column='action', window_partition_expr='d', holds=none) -%}
    {%- set hwm = latecomer__high_water_mark('source_changed_run_at') -%}
    select
        partition_value,
        collect_set(reason) as reasons,
        max(changed_run_at) as source_changed_run_at
    from (
        select {{ partition_expr }} as partition_value, {{ restatement_reason(action_column) }} as reason, changed_run_at
        from {{ changes }}
        where changed_run_at > {{ hwm }} and {{ action_column }} != 'duplicate'
        {%- if previous_partition_expr != partition_expr %}
        union all
        select {{ previous_partition_expr }} as partition_value, {{ restatement_reason(action_column) }} as reason, changed_run_at
        from {{ changes }}
        where changed_run_at > {{ hwm }} and {{ action_column }} != 'duplicate'
        {%- endif %}
        {%- if is_incremental() and backfill_window() %}
        {#- A backfill or replay recomputes every partition of its window
            (restate then writes only the rows whose values changed). #}
        union all
        {{ backfill_window_partitions(window_partition_expr) }}
        {%- endif %}
        {%- if holds is not none %}
        union all
        {{ latecomer__held_partitions(latecomer__hold_log_source(holds), hwm) }}
        {%- endif %}
    ) as touched
    where partition_value is not null
    group by partition_value
{%- endmacro %}


{#- The hold log, for changed_partitions(holds=...). The judge also depends
    on the stewards' decisions, which its gate reads (latecomer__open_holds):
    a decision alone is a change of its inputs, so the build after it judges
    again. A follower depends on the model publication_holds instead, which
    runs after the judge has logged this build's holds. -#}
{% macro latecomer__hold_log_source(holds) -%}
    {%- if holds not in ('judge', 'follow') -%}
        {{ exceptions.raise_compiler_error(model.name ~ ": changed_partitions(holds=" ~ holds
            ~ "): choose 'judge' (the model with the publication gate) or 'follow' (a model that leaves"
            ~ " its held dates as published)") }}
    {%- endif -%}
    {%- if holds == 'follow' -%}
        {%- do ref('publication_holds') -%}
    {%- else -%}
        {%- do source('bronze', 'hold_decisions') -%}
    {%- endif -%}
    {{- source('audit_logs', 'publication_hold_log') -}}
{%- endmacro %}
