{#- Fails with every combination of `columns` that occurs more than once or
    holds a null: a primary key, unique and not null, in one query. -#}
{% test primary_key(model, columns) %}
    select
        {{ columns | join(', ') }},
        count(*) as occurrences
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1 or {{ columns | join(' is null or ') }} is null
{% endtest %}
