{#- The revenue gold models' measures, in their column order
    (python_jobs.core.constants.REVENUE_MEASURES is the same list). In a
    file of its own: sqlfluff's templater reads a value returned by a macro
    of the same file as the caller's own. -#}
{% macro revenue_measure_names() -%}
    {{ return(['orders', 'gross_revenue', 'refunds', 'net_revenue']) }}
{%- endmacro %}
