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
    the override is logged (late_arrival_audit action publication_gate).

    A shim: the SQL reads each partition's figures (published rows and
    measure, the measure after this write, rows added, rows restated); the
    arithmetic, the checks and their wording are python_jobs/core/gate.py
    (adapter.publication_gate_judgement). -#}
{% macro publication_gate(restated, target, layout) %}
    {%- set measure = layout['measure'] -%}
    {%- if not measure or not execute -%}{{ return(none) }}{%- endif -%}
    {%- set partition = layout['partition'] -%}
    {#- The restated rows carry their published values (published_before), so
        the published table is read once, for its partitions' rows and totals. -#}
    {%- set figures_sql -%}
        with published_partitions as (
            select
                {{ partition }} as partition_value,
                count(*) as partition_rows,
                coalesce(sum({{ measure }}), 0) as partition_total
            from {{ target }}
            group by {{ partition }}
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
        ),

        incoming_partitions as (
            select
                partition_value,
                count_if(existed and not (new_measure <=> old_measure)) as restated_rows,
                count_if(not existed and in_published_partition) as added_rows,
                coalesce(sum(case when existed then new_measure - old_measure end), 0)
                + coalesce(sum(case when not existed and in_published_partition then new_measure end), 0)
                    as measure_change
            from incoming
            group by partition_value
        )

        select
            cast(coalesce(published_partitions.partition_value, incoming_partitions.partition_value) as string)
                as partition_value,
            published_partitions.partition_rows is not null as existed,
            coalesce(published_partitions.partition_rows, 0) as published_rows,
            coalesce(published_partitions.partition_total, 0) as published_measure,
            coalesce(published_partitions.partition_total, 0) + coalesce(incoming_partitions.measure_change, 0)
                as new_measure,
            coalesce(incoming_partitions.added_rows, 0) as rows_added,
            coalesce(incoming_partitions.restated_rows, 0) as rows_restated
        from published_partitions
        full outer join incoming_partitions
            on published_partitions.partition_value = incoming_partitions.partition_value
    {%- endset -%}
    {%- set judgement = adapter.publication_gate_judgement(
        run_query(figures_sql), measure, var('publication_gate'), model.name) -%}
    {%- if judgement.error -%}{{ exceptions.raise_compiler_error(judgement.error) }}{%- endif -%}
    {{ log(model.name ~ ': publication gate ' ~ ('passed' if judgement.passed else 'breached') ~ ' '
        ~ tojson(judgement.checks), info=true) }}
    {%- if judgement.passed -%}{{ return(none) }}{%- endif -%}
    {%- set override = var('publication_gate_override', none) -%}
    {%- do log_gate_decision(target, 'overridden' if override else 'blocked', judgement.checks, judgement.summary, override) -%}
    {%- if not override -%}
        {{ exceptions.raise_compiler_error(judgement.blocked_message) }}
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
            {{ sql_string(var('actor')) }} as actor,
            '{{ invocation_id }}' as invocation_id
    {%- endcall -%}
{% endmacro %}
