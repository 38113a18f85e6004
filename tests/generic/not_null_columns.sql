{#- Fails with every row where one of `columns` is null: dbt's not_null for
    several columns of one model, in one query. -#}
{% test not_null_columns(model, columns) %}
    select {{ columns | join(', ') }}
    from {{ model }}
    where {{ columns | join(' is null or ') }} is null
{% endtest %}
