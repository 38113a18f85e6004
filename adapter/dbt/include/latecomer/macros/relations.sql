{#- dbt-spark's drop_relation, purging plain Spark tables on Iceberg targets.

    Under Iceberg's SparkSessionCatalog (the session catalog of Iceberg
    targets), `drop table` without `purge` removes only the metastore entry,
    of any table (apache/iceberg#12790): a managed Parquet table's folder
    stays, and the next `create table` of the same name refuses it
    (LOCATION_ALREADY_EXISTS). Such a table is dropped with `purge`, which
    Spark's own catalog then does, deleting the folder. An Iceberg table is
    dropped from the catalog only, as before: its files stay, so that its
    metadata can be registered again (the benchmark puts tables back that
    way, tooling/bench/iceberg_state.py). Delta's catalog already deletes a
    managed table's files on `drop table`. -#}
{% macro latecomer__drop_relation(relation) -%}
    {#- The relation as dbt's cache knew it (LatecomerAdapter.drop_relation):
        a table whose provider is unknown is not purged. -#}
    {%- set purge = target.table_format == 'iceberg' and relation.is_table and relation.information is not none
        and not relation.is_iceberg and not relation.is_delta -%}
    {% call statement('drop_relation', auto_begin=False) -%}
        drop {{ relation.type }} if exists {{ relation }}{% if purge %} purge{% endif %}
    {%- endcall %}
{% endmacro %}
