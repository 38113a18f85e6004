{#- Views under Iceberg's SparkSessionCatalog.

    With the Iceberg extensions, an existing Hive view resolves as a V2 view of
    SparkSessionCatalog and `create or replace view` on it succeeds without
    replacing anything: the old definition stays (Iceberg 1.10.2, Spark 3.5;
    `alter view ... as` is refused). dbt-spark replaces views that way, so a
    view model whose SQL changed kept its old SQL. On Iceberg targets the
    existing view is dropped first; the replacement is then not atomic (a reader
    may briefly find no view). -#}
{% macro latecomer__create_view_as(relation, sql) -%}
    {%- if execute and target.table_format == 'iceberg' -%}
        {%- do adapter.drop_relation(relation.incorporate(type='view')) -%}
    {%- endif -%}
    {{ return(spark__create_view_as(relation, sql)) }}
{%- endmacro %}
