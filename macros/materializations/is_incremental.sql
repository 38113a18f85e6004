{#- dbt's is_incremental(), also true for the restated materialization: a
    restated model's SQL reads its own table the way an incremental one does.
    Overrides dbt's macro of the same name (root-project macros win). -#}
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
