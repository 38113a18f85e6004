{#- Validation gate before a restated gold model is published.

    Step 4 of the restated materialization, with the staged rows about to be
    merged. Models opt in with
    config(publication_gate={'measure': '<column>'[, 'partition': '<column>']})
    (partition defaults to the first partition_by column). The rows are compared
    with their published values, over the partitions already published (new
    partitions are publication, not restatement):
      restated_share  partitions whose values change / partitions published
                      (checked from min_published_partitions partitions on);
      total_change    |change of the measure's total| / |total published|;
      row_change      |rows added to published partitions| / rows published.
    Thresholds come from var publication_gate. A breach is logged to
    <schema>_audit.publication_gate_log and fails the model before anything
    is written, so the previous version stays visible, unless var
    publication_gate_override gives a reason: the write then goes ahead and
    the override is logged (late_arrival_audit action publication_gate). -#}
{% macro publication_gate(restated, target, layout) %}
    {%- set measure = layout['measure'] -%}
    {%- if not measure or not execute -%}{{ return(none) }}{%- endif -%}
    {%- set limits = var('publication_gate') -%}
    {%- set partition = layout['partition'] -%}
    {#- The restated rows carry their published values (published_before), so
        the published table is read once, for its partition list and totals. -#}
    {%- set stats_sql -%}
        with published_partitions as (
            select
                {{ partition }} as partition_value,
                count(*) as partition_rows,
                coalesce(sum({{ measure }}), 0) as partition_total
            from {{ target }}
            group by {{ partition }}
        ),

        published_summary as (
            select
                count(*) as published_partitions,
                coalesce(sum(partition_rows), 0) as published_rows,
                coalesce(sum(partition_total), 0) as published_total
            from published_partitions
        ),

        incoming as (
            select
                restated.{{ partition }} as partition_value,
                restated.{{ measure }} as new_measure,
                restated.published_before.{{ measure }} as old_measure,
                restated.published_before is not null as existed,
                published_partitions.partition_value is not null as in_published_partition
            from {{ restated }} as restated
            left join published_partitions on restated.{{ partition }} = published_partitions.partition_value
        )

        select
            first(published_summary.published_partitions) as published_partitions,
            first(published_summary.published_rows) as published_rows,
            first(published_summary.published_total) as published_total,
            count(distinct case when existed and not (new_measure <=> old_measure) then partition_value end)
                as restated_partitions,
            count_if(not existed and in_published_partition) as added_rows,
            coalesce(sum(case when existed then new_measure - old_measure end), 0)
            + coalesce(sum(case when not existed and in_published_partition then new_measure end), 0) as total_delta
        from incoming
        cross join published_summary
    {%- endset -%}
    {%- set row = run_query(stats_sql).rows[0] -%}
    {%- set published_partitions = row['published_partitions'] | int -%}
    {%- set published_rows = row['published_rows'] | int -%}
    {%- set published_total = row['published_total'] | float -%}
    {%- set restated_share = (row['restated_partitions'] / published_partitions) if published_partitions else 0 -%}
    {%- set total_change = ((row['total_delta'] | float) / published_total) | abs if published_total else 0 -%}
    {%- set row_change = (row['added_rows'] / published_rows) if published_rows else 0 -%}
    {%- set breaches = [] -%}
    {%- if published_partitions >= limits['min_published_partitions'] and restated_share > limits['max_restated_share'] -%}
        {%- do breaches.append(row['restated_partitions'] ~ ' of ' ~ published_partitions ~ ' published partitions restated ('
            ~ (restated_share * 100) | round(1) ~ '% > ' ~ (limits['max_restated_share'] * 100) | round(1) ~ '%)') -%}
    {%- endif -%}
    {%- if total_change > limits['max_total_change'] -%}
        {%- do breaches.append(measure ~ ' total moves by ' ~ row['total_delta'] ~ ' on ' ~ published_total ~ ' ('
            ~ (total_change * 100) | round(1) ~ '% > ' ~ (limits['max_total_change'] * 100) | round(1) ~ '%)') -%}
    {%- endif -%}
    {%- if row_change > limits['max_row_change'] -%}
        {%- do breaches.append(row['added_rows'] ~ ' rows added to ' ~ published_rows ~ ' published ('
            ~ (row_change * 100) | round(1) ~ '% > ' ~ (limits['max_row_change'] * 100) | round(1) ~ '%)') -%}
    {%- endif -%}
    {%- set checks = {
        'published_partitions': published_partitions, 'restated_partitions': row['restated_partitions'] | int,
        'restated_share': restated_share, 'published_rows': published_rows, 'added_rows': row['added_rows'] | int,
        'row_change': row_change, 'measure': measure, 'published_total': published_total,
        'total_delta': row['total_delta'] | float, 'total_change': total_change, 'limits': limits} -%}
    {{ log(model.name ~ ': publication gate ' ~ ('passed' if not breaches else 'breached') ~ ' '
        ~ tojson(checks), info=true) }}
    {%- if not breaches -%}{{ return(none) }}{%- endif -%}
    {%- set override = var('publication_gate_override', none) -%}
    {%- do log_gate_decision(target, 'overridden' if override else 'blocked', checks, breaches | join('; '), override) -%}
    {%- if not override -%}
        {{ exceptions.raise_compiler_error(
            "Publication gate blocked " ~ model.name ~ ": " ~ breaches | join('; ')
            ~ ". Nothing was written; the previous version stays visible. If the change is expected, re-run with "
            ~ "--vars '{publication_gate_override: \"<why>\"}' (the override is audited), or adjust var publication_gate.") }}
    {%- endif -%}
    {{ log(model.name ~ ': publication gate overridden: ' ~ override, info=true) }}
{% endmacro %}

{#- The gate's append-only decision log (created by ensure_audit_tables, an
    on-run-start hook). -#}
{% macro gate_log_relation() -%}
    {{ return(target.schema ~ '_audit.publication_gate_log') }}
{%- endmacro %}

{% macro log_gate_decision(target, decision, checks, breaches, override) %}
    {%- do ensure_audit_tables() -%}
    {%- call statement('log_gate_decision') -%}
        insert into {{ gate_log_relation() }}
        select
            {{ run_ts() }} as logged_run_at,
            {{ as_of_ts() }} as logged_at,
            '{{ model.name }}' as model,
            '{{ target }}' as relation,
            '{{ decision }}' as decision,
            {{ sql_string(breaches) }} as breaches,
            {{ sql_string(tojson(checks)) }} as checks,
            {{ sql_string(override) if override else 'cast(null as string)' }} as override_reason,
            '{{ var("actor") }}' as actor,
            '{{ invocation_id }}' as invocation_id
    {%- endcall -%}
{% endmacro %}
