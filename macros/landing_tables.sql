{#- on-run-start: landing tables the pipeline reads must exist. Bronze tables
    are created by the ingest job (python -m python_jobs.ingest), which owns
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
                    ~ "`python -m python_jobs.ingest --source <source> FILE...` "
                    ~ "(`make run` lands the sample data and builds).") }}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    create table if not exists {{ bronze_schema }}.steward_decisions (
        decision_id string,
        bronze_row_id string,
        decision string,
        reason string,
        actor string,
        decided_at timestamp
    ) using {{ target.table_format }}
    comment 'Append-only log of quarantine release/reject decisions (python -m python_jobs.steward)'
{% endmacro %}
