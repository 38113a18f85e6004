{#- Fails with every explained change whose causes do not add up to it:
    per `keys` (the row and its version), the sum of each measure over the
    cause rows must equal <measure>_after - <measure>_before. -#}
{% test causes_sum_to_change(model, keys, measures) %}
    select
        {{ keys | join(', ') }},
{%- for measure in measures %}
            sum({{ measure }}) as {{ measure }}_explained,
            max({{ measure }}_after) - max({{ measure }}_before) as {{ measure }}_change{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ model }}
    group by {{ keys | join(', ') }}
    having
        not (
{%- for measure in measures %}
                sum({{ measure }}) = max({{ measure }}_after) - max({{ measure }}_before){{ ' and' if not loop.last }}
            {%- endfor %}
        )
{% endtest %}
