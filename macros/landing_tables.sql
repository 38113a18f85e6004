{#- on-run-start: landing tables the pipeline reads must exist. Bronze tables
    are created by the ingest job (python -m python_jobs.landing.ingest), which owns
    their layout; the steward's decision log is created here. -#}
{% macro ensure_landing_tables() %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set bronze_schema = target.schema ~ '_bronze' -%}
    {%- do adapter.create_schema(api.Relation.create(schema=bronze_schema)) -%}
    {%- set flags_ = flags.WHICH if flags is defined else '' -%}
    {%- set needs_bronze = flags_ in ('build', 'run', 'test', 'snapshot') -%}
    {%- if needs_bronze -%}
        {%- for table in ['bronze_events', 'bronze_ingestions'] -%}
            {%- if adapter.get_relation(database=none, schema=bronze_schema, identifier=table) is none -%}
                {{ exceptions.raise_compiler_error(
                    "No " ~ bronze_schema ~ "." ~ table ~ " yet: land events first with "
                    ~ "`python -m python_jobs.landing.ingest --source <source> FILE...` "
                    ~ "(`make run` lands the sample data and builds).") }}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- call latecomer__ensure_table('ensure_steward_decisions', bronze_schema ~ '.steward_decisions') -%}
    (
        decision_id string,
        bronze_row_id string,
        decision string,
        reason string,
        actor string,
        decided_at timestamp
    ) using {{ target.table_format }}
    comment 'Append-only log of quarantine release/reject decisions (python -m python_jobs.landing.steward)'
    {%- endcall -%}
    {%- call latecomer__ensure_table('ensure_hold_decisions', latecomer__hold_decisions_relation()) -%}
    (
        decision_id string,
        hold_id string,
        decision string,
        reason string,
        actor string,
        decided_at timestamp
    ) using {{ target.table_format }}
    comment 'Append-only log of publication hold approve/reject decisions (python -m python_jobs.landing.steward holds)'
    {%- endcall -%}
    {{ return('') }}
{% endmacro %}

{#- on-run-start: the append-only audit logs written by macros rather than
    models: the publication gate's decisions, the gold change manifest and
    the table restores (restore_table). -#}
{% macro ensure_audit_tables() %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- do adapter.create_schema(api.Relation.create(schema=target.schema ~ '_audit')) -%}
    {%- do latecomer__table_restores_relation(create=true) -%}
    {%- call latecomer__ensure_table('ensure_gate_log', latecomer__gate_log_relation()) -%}
    (
        logged_run_at timestamp,
        logged_at timestamp,
        model string,
        relation string,
        decision string,
        breaches string,
        checks string,
        override_reason string,
        actor string,
        invocation_id string
    ) using {{ target.table_format }}
    comment 'Append-only log of publication gate breaches: blocked, or overridden with a reason'
    {%- endcall -%}
    {%- call latecomer__ensure_table('ensure_change_manifest', latecomer__manifest_relation()) -%}
    (
        invocation_id string,
        run_started_at timestamp,
        as_of timestamp,
        code_version string,
        model string,
        relation string,
        partition_value string,
        row_key string,
        change string,
        before_values string,
        after_values string,
        before_row_version int,
        after_row_version int,
        before_table_version string,
        after_table_version string,
        restatement_reason string,
        input_watermarks string,
        backfill string,
        actor string
    ) using {{ target.table_format }}
    comment 'Append-only change manifest: every gold row a run published or restated, before and after'
    {%- if target.table_format == 'iceberg' %}
    {#- published with the gold rows it describes (staged_publication.sql) #}
    tblproperties ('write.wap.enabled' = 'true')
    {%- endif %}
    {%- endcall -%}
    {%- call latecomer__ensure_table('ensure_hold_log', latecomer__hold_log_relation()) -%}
    (
        logged_run_at timestamp,
        judged_at timestamp,
        model string,
        relation string,
        hold_id string,
        partition_value string,
        event string,
        group_values string,
        checks_fired string,
        breaches string,
        published_values string,
        pending_values string,
        reasons string,
        resolution_reason string,
        actor string,
        invocation_id string
    ) using {{ target.table_format }}
    comment 'Append-only log of publication holds: held, judged again, cleared, approved, rejected, overridden'
    {%- if target.table_format == 'iceberg' %}
    {#- published with the gold rows it keeps back (staged_publication.sql) #}
    tblproperties ('write.wap.enabled' = 'true')
    {%- endif %}
    {%- endcall -%}
    {{ return('') }}
{% endmacro %}


{#- `create table if not exists <relation> <the call block's text>` as the
    statement `name`, unless dbt's relation cache already holds the table
    (adapter.cached_table_exists): the on-run-start hooks ensure their logs
    at every build, and once the deployment exists each was a statement
    that changed nothing. -#}
{% macro latecomer__ensure_table(name, relation) -%}
    {%- set definition = caller() -%}
    {%- if not adapter.cached_table_exists(relation) -%}
        {%- call statement(name) -%}
        create table if not exists {{ relation }} {{ definition }}
        {%- endcall -%}
    {%- endif -%}
{%- endmacro %}


{#- The arrival metadata every landed row carries, in bronze's order: where a
    line came from (ingestion, source, file, line) and when it arrived. For a
    select list at the usual indent: `{{ arrival_metadata_columns() }},`. -#}
{% macro arrival_metadata_columns() -%}
bronze_row_id,
        ingestion_id,
        source_system,
        source_file,
        line_number,
        arrival_ts,
        arrival_date,
        ingested_at
{%- endmacro %}
