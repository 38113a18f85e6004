{#- Why each published version of a gold_daily_revenue row differs from the
    one before it, by cause (macros/publication/revenue_causes.sql): the
    silver change log's rows between the two versions, each adding its new
    values to its event date and taking its old ones from its previous event
    date. -#}
{{ config(partition_by=['explained_date'], skip_if_inputs_unchanged=true, as_of_dependent=false) }}

{%- set gold -%}
    select * from {{ ref('gold_daily_revenue') }}
{%- endset %}

{% call(lower_bound) revenue_causes(gold, ['event_date', 'source_system']) -%}
    {{ silver_change_contributions(ref('silver_event_changes'), {
        'event_date': ['event_date', 'previous_event_date'],
        'source_system': ['source_system', 'source_system'],
    }, lower_bound) }}
{%- endcall %}
