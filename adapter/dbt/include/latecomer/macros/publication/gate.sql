{#- Validation gate before a restated gold model is published.

    Step 4 of the restated materialization, with the spilled rows about to be
    merged. The judge (gold_daily_revenue) opts in with
    config(publication_gate={'measure': '<column>'[, 'count': '<column>']
                             [, 'by': '<column>'][, 'partition': '<column>']})
    (partition defaults to the first partition_by column). The SQL below
    reads, per partition and `by` group, the published figures (rows, measure,
    count, the least settled status) and what the spilled rows change (the
    measure, the count, rows added, rows restated, and every reason their
    partition was recomputed for). The arithmetic, the checks and their
    wording are python_jobs/core/gate.py, and what they do to the model's
    holds python_jobs/core/holds.py (adapter.publication_gate_holds): what
    the watermark tiers admit publishes; a partition that breaches is held
    (macros/publication/holds.sql), and everything else publishes.
    Thresholds come from var publication_gate.

    Breaches are also logged to <schema>_audit.publication_gate_log (decision
    held, or overridden when var publication_gate_override gives a reason:
    the run then publishes what it would hold, audited as action
    publication_gate). Returns the partitions to leave as published. -#}
{% macro latecomer__publication_gate(restated, target, layout, open_holds) %}
    {%- set measure = layout['measure'] -%}
    {%- if not measure or not execute -%}{{ return([]) }}{%- endif -%}
    {%- set partition = layout['partition'] -%}
    {%- set group = layout['by'] or 'cast(null as string)' -%}
    {%- set count = layout['count'] -%}
    {#- The restated rows carry their published values (published_before), so
        the published table is read once, for its groups' rows and totals. -#}
    {%- set figures_sql -%}
        with published_groups as (
            select
                {{ partition }} as partition_value,
                {{ group }} as group_value,
                count(*) as partition_rows,
                coalesce(sum({{ measure }}), 0) as partition_total,
                {{ 'coalesce(sum(' ~ count ~ '), 0)' if count else '0' }} as partition_count,
                element_at(array('live', 'preliminary', 'final'),
                    min(case status when 'final' then 3 when 'preliminary' then 2 else 1 end)) as partition_status
            from {{ target }}
            group by {{ partition }}, {{ group }}
        ),

        incoming_groups as (
            select
                {{ partition }} as partition_value,
                {{ group }} as group_value,
                count_if(published_before is not null and not ({{ measure }} <=> published_before.{{ measure }}))
                    as restated_rows,
                count_if(published_before is null) as added_rows,
                coalesce(sum({{ measure }} - coalesce(published_before.{{ measure }}, 0)), 0) as measure_change,
                {{ 'coalesce(sum(' ~ count ~ ' - coalesce(published_before.' ~ count ~ ', 0)), 0)' if count else '0' }}
                    as count_change,
                array_join(array_sort(array_distinct(flatten(collect_list(change_reasons)))), ',') as reasons
            from {{ restated }}
            group by {{ partition }}, {{ group }}
        )

        select
            cast(coalesce(published_groups.partition_value, incoming_groups.partition_value) as string)
                as partition_value,
            cast(coalesce(published_groups.group_value, incoming_groups.group_value) as string) as group_value,
            published_groups.partition_rows is not null as existed,
            published_groups.partition_status as published_status,
            coalesce(published_groups.partition_rows, 0) as published_rows,
            coalesce(published_groups.partition_total, 0) as published_measure,
            coalesce(incoming_groups.measure_change, 0) as measure_change,
            coalesce(published_groups.partition_count, 0) as published_count,
            coalesce(incoming_groups.count_change, 0) as count_change,
            coalesce(incoming_groups.added_rows, 0) as rows_added,
            coalesce(incoming_groups.restated_rows, 0) as rows_restated,
            incoming_groups.reasons
        from published_groups
        full outer join incoming_groups
            on published_groups.partition_value <=> incoming_groups.partition_value
            and published_groups.group_value <=> incoming_groups.group_value
    {%- endset -%}
    {%- set override = var('publication_gate_override', none) -%}
    {%- set judgement = adapter.publication_gate_holds(
        run_query(figures_sql), open_holds, measure, var('publication_gate'), model.name, count,
        override=override, actor=var('actor')) -%}
    {%- if judgement.error -%}{{ exceptions.raise_compiler_error(judgement.error) }}{%- endif -%}
    {{ log(model.name ~ ': publication gate ' ~ ('passed' if not judgement.breaches else 'breached') ~ ' '
        ~ tojson(judgement.checks), info=true) }}
    {%- if judgement.breaches -%}
        {%- do latecomer__log_gate_decision(target, 'overridden' if override else 'held', judgement.checks, judgement.summary,
                                 override) -%}
    {%- endif -%}
    {%- do latecomer__log_hold_events(target, judgement.events) -%}
    {{ return(judgement.held_partitions) }}
{% endmacro %}

{#- The gate's append-only decision log (created by ensure_audit_tables, an
    on-run-start hook). -#}
{% macro latecomer__gate_log_relation() -%}
    {{ return(target.schema ~ '_audit.publication_gate_log') }}
{%- endmacro %}

{% macro latecomer__log_gate_decision(target, decision, checks, breaches, override) %}
    {%- do ensure_audit_tables() -%}
    {%- call statement('log_gate_decision') -%}
        insert into {{ latecomer__gate_log_relation() }}
        select
            {{ run_ts() }} as logged_run_at,
            {{ as_of_ts() }} as logged_at,
            '{{ model.name }}' as model,
            '{{ target }}' as relation,
            '{{ decision }}' as decision,
            {{ latecomer__sql_string(breaches) }} as breaches,
            {{ latecomer__sql_string(tojson(checks)) }} as checks,
            {{ latecomer__sql_string(override) if override else 'cast(null as string)' }} as override_reason,
            {{ latecomer__sql_string(var('actor')) }} as actor,
            '{{ invocation_id }}' as invocation_id
    {%- endcall -%}
{% endmacro %}
