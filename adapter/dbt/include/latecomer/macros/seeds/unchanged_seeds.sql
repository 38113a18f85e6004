{#- A seed whose file has not changed since it was loaded is left alone.
    dbt reloads every seed on every build (drop, create, insert), so each build
    would commit a new table version even with nothing new. The seed file's
    checksum is kept in the table property latecomer.seed_checksum; while it
    matches, and without --full-refresh, neither the reset nor the load runs. -#}
{% macro latecomer__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- if not full_refresh and latecomer__seed_checksum(old_relation) == model.checksum.checksum -%}
        {%- do adapter.memo_set('seed_unchanged:' ~ this, true) -%}
        {{ log(model.name ~ ': seed file unchanged, ' ~ old_relation ~ ' left as it is', info=true) }}
        {{ return('-- ' ~ model.name ~ ': seed file unchanged') }}
    {%- endif -%}
    {{ return(spark__reset_csv_table(model, full_refresh, old_relation, agate_table)) }}
{% endmacro %}


{% macro latecomer__load_csv_rows(model, agate_table) %}
    {%- if adapter.memo_has('seed_unchanged:' ~ this) -%}
        {{ return('-- ' ~ model.name ~ ': seed file unchanged') }}
    {%- endif -%}
    {%- set sql = spark__load_csv_rows(model, agate_table) -%}
    {%- call statement('record_seed_checksum') -%}
        alter table {{ this }} set tblproperties ('latecomer.seed_checksum' = {{ latecomer__sql_string(model.checksum.checksum) }})
    {%- endcall -%}
    {{ return(sql) }}
{% endmacro %}


{#- The checksum recorded on a seed's table, or none. -#}
{% macro latecomer__seed_checksum(relation) %}
    {{ return(latecomer__table_property(relation, 'latecomer.seed_checksum')) }}
{% endmacro %}
