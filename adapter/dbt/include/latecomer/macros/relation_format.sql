{#- Table format of relations listed by Spark's session catalog.

    With Iceberg's SparkSessionCatalog (the catalog the local and thrift
    targets use), `show table extended` goes through Spark's v1 Hive path and
    reports every Iceberg table as `Provider: hive`; only its table properties
    say `table_type=ICEBERG`. dbt-spark reads the provider alone, so an existing
    Iceberg table looks like a plain Hive table, and its snapshot
    materialization refuses to run a second time ("The existing table ... is
    in another format than 'delta' or 'iceberg' or 'hudi"). -#}

{% macro latecomer_with_table_format(relation) -%}
    {%- if relation is none or relation.is_iceberg or relation.is_delta or relation.is_hudi -%}
        {{ return(relation) }}
    {%- endif -%}
    {%- set information = (relation.information or '') | lower -%}
    {%- if 'table_type=iceberg' in information or 'provider: iceberg' in information -%}
        {{ return(relation.incorporate(is_iceberg=true)) }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}

{#- dbt's get_or_create_relation (used by the snapshot materialization), with the
    table format read from the table properties as well as the provider. -#}
{% macro latecomer__get_or_create_relation(database, schema, identifier, type) -%}
    {%- set found = default__get_or_create_relation(database, schema, identifier, type) -%}
    {%- if found[0] -%}
        {{ return([true, latecomer_with_table_format(found[1])]) }}
    {%- endif -%}
    {{ return(found) }}
{%- endmacro %}
