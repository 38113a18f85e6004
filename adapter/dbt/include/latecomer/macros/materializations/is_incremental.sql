{#- dbt's is_incremental(), also true for the restated materialization: a
    restated model's SQL reads its own table the way an incremental one does.
    Replaces dbt's built-in macro of the same name: an adapter's include
    folder comes before dbt's own macros, in every project on this adapter. -#}
{% macro is_incremental() %}
    {%- if not execute -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
    {{ return(relation is not none
              and relation.type == 'table'
              and model.config.materialized in ('incremental', 'restated')
              and not should_full_refresh()) }}
{% endmacro %}
