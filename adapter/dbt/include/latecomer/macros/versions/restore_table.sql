{#- dbt run-operation restore_table --args '{model: gold_daily_revenue, version: 123, reason: "..."}'

    Restores one model's table to an earlier version so the next run re-applies
    what came after it (the stateful-merger pattern: an incremental model's
    high-water marks are read from its own table, so after the restore the next
    `dbt build` recomputes everything changed since that version). Exactly one
    of version (an id from table_versions / gold_versions), as_of_time (the
    version current at that UTC time) or invocation_id (the version a dbt run
    left the table in) names the version; a reason is required. Only the
    restated gold models can be restored (latecomer__restorable_models): silver, the
    ledger and the audit tables keep history a restore would delete. Unknown or
    expired versions are refused. Every restore is appended to
    <schema>_audit.table_restores (created if missing).

    A shim: the arguments are checked, the version picked and the errors
    worded by python_jobs/core/versions/ (adapter.restore_request,
    version_with_id, latecomer__version_current_at, restore_target_missing); this macro
    runs the SQL. -#}
{% macro restore_table(model=none, version=none, as_of_time=none, invocation_id=none, reason=none) %}
    {%- set request = adapter.restore_request(model, version, as_of_time, invocation_id, reason, latecomer__restorable_models()) -%}
    {%- if request.error -%}{{ exceptions.raise_compiler_error(request.error) }}{%- endif -%}
    {%- do acquire_run_lock('dbt run-operation restore_table', 'restore') -%}
    {%- set relation = latecomer__versioned_model_relation(model) -%}
    {%- set versions = latecomer__table_versions(relation) -%}
    {%- if request.selector == 'version' -%}
        {%- set target_entry = adapter.version_with_id(versions, latecomer__checked_version_id(version)) -%}
    {%- elif request.selector == 'as_of_time' -%}
        {%- set target_entry = adapter.version_current_at(versions, latecomer__version_time_string(as_of_time)) -%}
    {%- else -%}
        {%- set target_entry = latecomer__version_of_invocation(relation, invocation_id, versions) -%}
    {%- endif -%}
    {%- if target_entry is none -%}
        {{ exceptions.raise_compiler_error(adapter.restore_target_missing(request, relation | string, versions)) }}
    {%- endif -%}

    {%- set from_version = latecomer__current_version(relation) -%}
    {%- if from_version == target_entry.version -%}
        {{ log('restore_table: ' ~ relation ~ ' is already at version ' ~ from_version ~ '; nothing restored, nothing recorded.', info=true) }}
        {%- do release_run_lock() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do latecomer__restore_relation(relation, target_entry.version) -%}
    {%- set restores = latecomer__table_restores_relation(create=true) -%}
    {#- statement, not run_query: an INSERT returns no result set on Thrift. -#}
    {%- call statement('record_table_restore') -%}
        {{ "insert into " ~ restores ~ " select current_timestamp(), "
        ~ latecomer__sql_string(model) ~ ", "
        ~ latecomer__sql_string(relation | string) ~ ", "
        ~ (latecomer__sql_string(from_version) if from_version is not none else 'cast(null as string)') ~ ", "
        ~ latecomer__sql_string(target_entry.version) ~ ", "
        ~ "cast(" ~ latecomer__sql_string(target_entry.committed_at) ~ " as timestamp), "
        ~ latecomer__sql_string(request.text) ~ ", "
        ~ latecomer__sql_string(request.reason) ~ ", "
        ~ latecomer__sql_string(var('actor')) ~ ", "
        ~ latecomer__sql_string(latecomer__current_invocation_id()) }}
    {%- endcall -%}
    {{ log('restore_table: ' ~ relation ~ ' restored from version ' ~ from_version ~ ' to version '
        ~ target_entry.version ~ ' (current from ' ~ target_entry.committed_at ~ ' UTC, ' ~ request.text
        ~ '); recorded in ' ~ restores ~ '. Re-run with: dbt build --select ' ~ model ~ '+', info=true) }}
    {%- do release_run_lock() -%}
{% endmacro %}

{#- The models restore_table may restore: the restated gold models, whose next
    run re-applies what came after the restored version (their high-water marks
    are read from their own table). -#}
{% macro latecomer__restorable_models() -%}
    {{ return(graph.nodes.values()
        | selectattr('resource_type', 'equalto', 'model')
        | selectattr('config.materialized', 'equalto', 'restated')
        | map(attribute='name') | sort | list) }}
{%- endmacro %}
