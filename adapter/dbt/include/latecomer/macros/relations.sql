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
    {%- set purge = false -%}
    {%- if relation.type == 'table' and target.table_format == 'iceberg' -%}
        {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
        {%- set purge = found is not none and found.is_table and not found.is_iceberg and not found.is_delta -%}
    {%- endif -%}
    {% call statement('drop_relation', auto_begin=False) -%}
        drop {{ relation.type }} if exists {{ relation }}{% if purge %} purge{% endif %}
    {%- endcall %}
{% endmacro %}
