{#- The deployment's run lock (python_jobs/core/run_lock.py): one build,
    ingest, steward decision or writing run-operation at a time per target
    schema. on-run-start takes it (after the vars are checked, before any
    table is touched) and the last on-run-end hook releases it; a process
    that dies releases it too. A second caller exits at once naming the
    holder, or waits up to LATECOMER_LOCK_WAIT_SECONDS. -#}
{% macro acquire_run_lock(what=none) %}
    {%- if execute -%}
        {%- do adapter.acquire_run_lock(what or ('dbt ' ~ flags.WHICH)) -%}
    {%- endif -%}
{% endmacro %}

{% macro release_run_lock() %}
    {%- if execute -%}
        {%- do adapter.release_run_lock() -%}
    {%- endif -%}
{% endmacro %}
