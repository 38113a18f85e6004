{#- The deployment's run locks (python_jobs/core/run_lock.py): one build,
    steward decision or writing run-operation at a time per target schema,
    and on the embedded metastore one ingest too (on a shared catalog
    landings take the bronze append lock instead, and append while a build
    runs). on-run-start takes them (after the vars are checked, before any
    table is touched) and the last on-run-end hook releases them; a process
    that dies releases them too. A second caller exits at once naming the
    holder, or waits up to LATECOMER_LOCK_WAIT_SECONDS.
    `operation`: build, restore or maintain (run_lock.Operation). -#}
{% macro acquire_run_lock(what=none, operation='build') %}
    {%- if execute -%}
        {%- do adapter.acquire_run_lock(what or ('dbt ' ~ flags.WHICH), operation) -%}
    {%- endif -%}
{% endmacro %}

{% macro release_run_lock() %}
    {%- if execute -%}
        {%- do adapter.release_run_lock() -%}
    {%- endif -%}
{% endmacro %}
