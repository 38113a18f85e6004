{#- on_schema_change 'append_new_columns' as dbt defines it: a column the
    model no longer selects stays in the table, and the new rows hold null in
    it. dbt-spark's statements take every column of the table from the new
    rows (append: `select <table's columns>`, merge: `insert *`), so they
    failed on the missing column. The new rows get the missing columns, as
    nulls of the table's types, in a temporary view that the strategy then
    reads instead; with no column missing the rows are used as they are. -#}
{% macro latecomer_rows_with_table_columns(source, target) %}
    {%- set source_names = adapter.get_columns_in_relation(source) | map(attribute='name') | map('lower') | list -%}
    {%- set missing = [] -%}
    {%- for column in adapter.get_columns_in_relation(target) -%}
        {%- if column.name | lower not in source_names -%}
            {%- do missing.append(column) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not missing -%}
        {{ return(source) }}
    {%- endif -%}
    {%- set aligned = source.incorporate(path={'identifier': source.identifier ~ '__aligned'}).include(database=false, schema=false) -%}
    {% call statement('rows_with_table_columns') -%}
        create or replace temporary view {{ aligned }} as
        select *
        {%- for column in missing %}, cast(null as {{ column.data_type }}) as {{ column.quoted }}{% endfor %}
        from {{ source }}
    {%- endcall %}
    {{ return(aligned) }}
{% endmacro %}


{#- dbt-spark's alter_relation_add_remove_columns (on_schema_change
    'sync_all_columns'), dropping the columns the model no longer selects,
    which dbt-spark refuses on every table: Iceberg drops columns as they are;
    Delta Lake drops them once the table maps columns by name
    (`delta.columnMapping.mode` 'name', reader protocol 2 and writer 5, which
    Delta readers since 1.2 read), set here first. Other tables keep
    dbt-spark's error. -#}
{% macro latecomer__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
    {%- if remove_columns and (relation.is_iceberg or relation.is_delta) -%}
        {%- if add_columns -%}
            {%- do spark__alter_relation_add_remove_columns(relation, add_columns, none) -%}
        {%- endif -%}
        {%- if relation.is_delta -%}
            {% set sql -%}
                alter table {{ relation }} set tblproperties (
                    'delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')
            {%- endset %}
            {%- do run_query(sql) -%}
        {%- endif -%}
        {% set sql -%}
            alter table {{ relation }} drop columns ({{ remove_columns | map(attribute='quoted') | join(', ') }})
        {%- endset %}
        {%- do run_query(sql) -%}
    {%- else -%}
        {%- do spark__alter_relation_add_remove_columns(relation, add_columns, remove_columns) -%}
    {%- endif -%}
{% endmacro %}

{#- dbt's get_columns_in_relation macro, returning the relation's columns.

    dbt documents the macro as returning a list of columns (what the adapter
    method returns); dbt-spark's returns the raw `describe extended` table
    instead, whose rows have no `name`. dbt's snapshot materialization reads
    the names to build a hard-deleted row (`hard_deletes: new_record`): with
    none, it took every column from the missing source row, so the deletion
    record was written with a null key. -#}
{% macro latecomer__get_columns_in_relation(relation) -%}
    {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}

{#- dbt-spark's alter_column_set_constraints, with a contract's `not_null`
    as a CHECK constraint on Delta Lake tables.

    dbt-spark enforces `not_null` with `alter table ... change column ... set
    not null` after the table is created. Open-source Delta Lake refuses to
    make an existing column non-nullable ("Cannot change nullable column to
    non-nullable"), so every contracted model with a `not_null` column failed
    to build. A CHECK constraint `<column> is not null` holds the same rule:
    Delta checks the rows already there when it is added, and every later
    write. An incremental run keeps the constraints its table already has. -#}
{% macro latecomer__alter_column_set_constraints(relation, column_dict) %}
    {%- if is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for column_name in column_dict -%}
        {%- for constraint in column_dict[column_name]['constraints'] -%}
            {%- if constraint.type != 'not_null' -%}
                {{ exceptions.warn('Invalid constraint for column ' ~ column_name ~ '. Only `not_null` is supported.') }}
            {%- else -%}
                {%- set quoted_name = adapter.quote(column_name) if column_dict[column_name]['quote'] else column_name -%}
                {%- call statement() -%}
                    alter table {{ relation }} add constraint {{ column_name | lower }}_not_null check ({{ quoted_name }} is not null)
                {%- endcall -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
{% endmacro %}
