{#- Restatement reasons: what a silver change action means for a restated
    partition, and which reason a restated row shows when several apply. -#}

{% macro restatement_reason(action) -%}
    case {{ action }}
        when 'late_merge' then 'late_arrival'
        when 'insert' then null
        when 'duplicate' then null
        else {{ action }}
    end
{%- endmacro %}

{#- The reason shown when several apply, most significant first. -#}
{% macro primary_reason(reasons) -%}
    case
        {%- for reason in ['deletion', 'correction', 'dimension_change', 'quarantine_release', 'replay', 'backfill', 'late_arrival'] %}
            when array_contains({{ reasons }}, '{{ reason }}') then '{{ reason }}'
        {%- endfor %}
    end
{%- endmacro %}
