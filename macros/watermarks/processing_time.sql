{#- Processing time. `as_of` is business time (status, restated_on, first seen),
    the wall clock unless given; `run_ts` is the build's stamp on the rows it
    writes, which high-water marks compare against, so replays with an old
    as_of stay exact: the wall-clock start of the invocation, never behind an
    earlier build's stamp (start_run_clock, python_jobs/core/run_clock.py). -#}
{% macro as_of_ts() -%}
    {%- set raw = as_of_given() -%}
    {%- if raw is none -%}
        {{ return("cast('" ~ wall_clock_text() ~ "' as timestamp)") }}
    {%- endif -%}
    {%- set problem = adapter.as_of_problem(raw, format_only=true) -%}
    {%- if problem -%}
        {{ exceptions.raise_compiler_error(problem) }}
    {%- endif -%}
    {{ return("cast('" ~ raw ~ "' as timestamp)") }}
{%- endmacro %}

{#- The as_of this run was given, as text, or none: var as_of, else the
    environment variable LATECOMER_AS_OF. Both set the same clock; the
    variable leaves dbt's vars alone, and a change of --vars makes dbt parse
    the whole project again (about 2 s), so scheduled builds that pin their
    clock keep dbt's partial parsing. It is read only while executing:
    parsing never depends on it (the Python models' meta reads it itself).
    validate_as_of fails a run given both, different. -#}
{% macro as_of_given() -%}
    {%- set from_var = var('as_of', none) -%}
    {%- if from_var is not none and from_var | string | trim != '' -%}
        {{ return(from_var | string | trim) }}
    {%- endif -%}
    {%- set from_env = env_var('LATECOMER_AS_OF', '') | trim if execute else '' -%}
    {{ return(from_env or none) }}
{%- endmacro %}

{% macro run_ts() -%}
    {%- set stamp = adapter.run_stamp() if execute else none -%}
    {{ return("cast('" ~ (stamp or wall_clock_text()) ~ "' as timestamp)") }}
{%- endmacro %}

{#- The invocation's start by this host's clock, as run_clock.format_stamp writes it. -#}
{% macro wall_clock_text() -%}
    {{ run_started_at.strftime('%Y-%m-%d %H:%M:%S.%f') }}
{%- endmacro %}

{#- on-run-start, after the run lock: this build's stamp (run_ts), kept as
    the change manifest's property latecomer.last_run_ts before any row
    carries it, so the next build starts after it even if this one stops.
    On Delta, where setting a table property is a commit (a new version of
    the manifest at every build, even one that changes nothing), it is a
    property of the audit schema instead, kept by the metastore alone. -#}
{% macro start_run_clock() %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set on_schema = latecomer__versions_table_format() == 'delta' -%}
    {%- set audit_schema = target.schema ~ '_audit' -%}
    {%- set last = schema_property(audit_schema, 'latecomer.last_run_ts') if on_schema else none -%}
    {%- if last is none -%}
        {%- set last = latecomer__table_property(latecomer__manifest_relation(), 'latecomer.last_run_ts') -%}
    {%- endif -%}
    {%- set stamp = adapter.start_run_clock(run_started_at, last) -%}
    {%- if stamp > wall_clock_text() -%}
        {{ log('Run clock: the last build stamped its rows ' ~ last ~ ' UTC, later than the clock of this host ('
            ~ run_started_at.strftime('%Y-%m-%d %H:%M:%S') ~ '): this build stamps its rows ' ~ stamp, info=true) }}
    {%- endif -%}
    {%- call statement('record_run_clock') -%}
        {%- if on_schema %}
        alter database {{ audit_schema }} set dbproperties ('latecomer.last_run_ts' = {{ latecomer__sql_string(stamp) }})
        {%- else %}
        alter table {{ latecomer__manifest_relation() }} set tblproperties ('latecomer.last_run_ts' = {{ latecomer__sql_string(stamp) }})
        {%- endif %}
    {%- endcall -%}
{% endmacro %}

{#- A schema (database) property's value, or none. -#}
{% macro schema_property(schema, key) %}
    {%- for row in run_query('describe database extended ' ~ schema).rows if row[0] == 'Properties' -%}
        {%- set found = modules.re.search('\\(' ~ modules.re.escape(key) ~ ',([^)]*)\\)', row[1] | string) -%}
        {%- if found -%}
            {{ return(found.group(1)) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}
