{#- dbt context that sqlfluff's Jinja templater lacks, for linting only. -#}
{% macro var(name, default=none) %}{{ return(project_vars.get(name, default)) }}{% endmacro %}
{% macro is_incremental() %}{{ return(true) }}{% endmacro %}
{% macro log(message, info=false) %}{% endmacro %}
{% macro run_query(sql) %}{{ return(none) }}{% endmacro %}
{% macro get_where_subquery(relation) %}{{ return(relation) }}{% endmacro %}
{#- adapter/dbt/include/latecomer/macros/materializations is not loaded here: the model-facing macros of a materialization. -#}
{% macro latecomer__recomputed_rebuilds() %}{{ return(false) }}{% endmacro %}
