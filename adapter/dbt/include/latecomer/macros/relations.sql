{#- dbt-spark's drop_relation, purging tables on Iceberg targets.

    Under Iceberg's SparkSessionCatalog (the session catalog of Iceberg
    targets), `drop table` without `purge` removes only the metastore entry,
    of any table (apache/iceberg#12790): an Iceberg table's files stay on
    disk, and so does a managed Parquet table's folder, which the next
    `create table` of the same name then refuses (LOCATION_ALREADY_EXISTS).
    With `purge` an Iceberg table's files are deleted, and any other table is
    dropped by Spark's own catalog, which deletes a managed table's folder.
    Delta's catalog already deletes a managed table's files on `drop table`. -#}
{% macro latecomer__drop_relation(relation) -%}
    {%- set purge = relation.type == 'table' and target.table_format == 'iceberg' -%}
    {% call statement('drop_relation', auto_begin=False) -%}
        drop {{ relation.type }} if exists {{ relation }}{% if purge %} purge{% endif %}
    {%- endcall %}
{% endmacro %}
