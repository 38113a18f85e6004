{#- dbt run-operation restore_table --args '{model: gold_daily_revenue, version: 123, reason: "..."}'

    Restores one model's table to an earlier version so the next run re-applies
    what came after it (the stateful-merger pattern: an incremental model's
    high-water marks are read from its own table, so after the restore the next
    `dbt build` recomputes everything changed since that version). Exactly one
    of version (an id from table_versions / gold_versions), as_of_time (the
    version current at that UTC time) or invocation_id (the version a dbt run
    left the table in) names the version; a reason is required. Unknown or
    expired versions are refused. Every restore is appended to
    <schema>_audit.table_restores (created if missing). -#}
{% macro restore_table(model=none, version=none, as_of_time=none, invocation_id=none, reason=none) %}
    {%- if model is none or (model | string | trim) == '' -%}
        {{ exceptions.raise_compiler_error("restore_table needs a model: --args '{model: gold_daily_revenue, version: ..., reason: ...}'") }}
    {%- endif -%}
    {%- set reason = (reason | string | trim) if reason is not none else '' -%}
    {%- if reason == '' -%}
        {{ exceptions.raise_compiler_error("restore_table needs a reason (--args '{..., reason: \"why\"}'); it is recorded in table_restores.") }}
    {%- endif -%}
    {%- set selectors = [] -%}
    {%- for name, value in [('version', version), ('as_of_time', as_of_time), ('invocation_id', invocation_id)] -%}
        {%- if value is not none and (value | string | trim) != '' -%}
            {%- do selectors.append(name ~ '=' ~ (value | string | trim)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if selectors | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "restore_table needs exactly one of version, as_of_time or invocation_id, got "
            ~ (selectors | join(', ') or 'none')) }}
    {%- endif -%}
    {%- set relation = versioned_model_relation(model) -%}
    {%- set versions = table_versions(relation) -%}
    {%- set known = [] -%}
    {%- for entry in versions[-10:] -%}
        {%- do known.append(entry.version ~ ' (' ~ entry.committed_at ~ ', ' ~ entry.operation ~ ')') -%}
    {%- endfor -%}
    {%- set known = 'its retained versions, oldest first' ~ (' (last 10)' if versions | length > 10 else '')
        ~ ': ' ~ (known | join('; ') or 'none') -%}

    {%- if version is not none and (version | string | trim) != '' -%}
        {%- set wanted = checked_version_id(version) -%}
        {%- set matches = versions | selectattr('version', 'equalto', wanted) | list -%}
        {%- if matches | length == 0 -%}
            {{ exceptions.raise_compiler_error(
                "Unknown version " ~ wanted ~ " of " ~ relation ~ " (never existed or expired); " ~ known) }}
        {%- endif -%}
        {%- set target_entry = matches[-1] -%}
    {%- elif as_of_time is not none and (as_of_time | string | trim) != '' -%}
        {%- set target_entry = version_current_at(versions, version_time_string(as_of_time)) -%}
        {%- if target_entry is none -%}
            {{ exceptions.raise_compiler_error(
                relation ~ " had no version at " ~ as_of_time ~ " (or it has expired); " ~ known) }}
        {%- endif -%}
    {%- else -%}
        {%- set target_entry = version_of_invocation(relation, invocation_id, versions) -%}
        {%- if target_entry is none -%}
            {{ exceptions.raise_compiler_error(
                "No retained version of " ~ relation ~ " was written by dbt invocation " ~ invocation_id
                ~ " (no row of any retained version carries it as its newest run); " ~ known) }}
        {%- endif -%}
    {%- endif -%}

    {%- set from_version = current_version(relation) -%}
    {%- if from_version == target_entry.version -%}
        {{ log('restore_table: ' ~ relation ~ ' is already at version ' ~ from_version ~ '; nothing restored, nothing recorded.', info=true) }}
        {{ return(none) }}
    {%- endif -%}
    {%- do restore_relation(relation, target_entry.version) -%}
    {%- set restores = table_restores_relation(create=true) -%}
    {#- statement, not run_query: an INSERT returns no result set on Thrift. -#}
    {%- call statement('record_table_restore') -%}
        {{ "insert into " ~ restores ~ " select current_timestamp(), "
        ~ sql_string(model) ~ ", "
        ~ sql_string(relation | string) ~ ", "
        ~ (sql_string(from_version) if from_version is not none else 'cast(null as string)') ~ ", "
        ~ sql_string(target_entry.version) ~ ", "
        ~ "cast(" ~ sql_string(target_entry.committed_at) ~ " as timestamp), "
        ~ sql_string(selectors[0]) ~ ", "
        ~ sql_string(reason) ~ ", "
        ~ sql_string(var('actor') | string) ~ ", "
        ~ sql_string(current_invocation_id()) }}
    {%- endcall -%}
    {{ log('restore_table: ' ~ relation ~ ' restored from version ' ~ from_version ~ ' to version '
        ~ target_entry.version ~ ' (current from ' ~ target_entry.committed_at ~ ' UTC, ' ~ selectors[0]
        ~ '); recorded in ' ~ restores ~ '. Re-run with: dbt build --select ' ~ model ~ '+', info=true) }}
{% endmacro %}
