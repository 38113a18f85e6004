{#- "Why did this number change?" for one gold_daily_revenue row:
    dbt run-operation explain_change --args '{event_date: 2024-01-15, source_system: web, from_version: 1, to_version: 3}'
    prints the change of `measure` (net_revenue; or orders, gross_revenue,
    refunds) between the two versions, broken down by cause, from
    gold_daily_revenue_causes (python_jobs/core/explain.py). Versions default
    to the latest and the one before it. Returns the sentence. -#}
{% macro explain_change(event_date, source_system, from_version=none, to_version=none, measure='net_revenue') %}
    {%- if not modules.re.match('^[0-9]{4}-[0-9]{2}-[0-9]{2}$', event_date | string) -%}
        {{ exceptions.raise_compiler_error("explain_change: event_date must be a date (YYYY-MM-DD), got '" ~ event_date ~ "'") }}
    {%- endif -%}
    {%- for name, value in [('from_version', from_version), ('to_version', to_version)] -%}
        {%- if value is not none and not modules.re.match('^[0-9]+$', value | string) -%}
            {{ exceptions.raise_compiler_error("explain_change: " ~ name ~ " must be a row version (a whole number), got '" ~ value ~ "'") }}
        {%- endif -%}
    {%- endfor -%}
    {%- set rows = run_query(
        'select * from ' ~ ref('gold_daily_revenue_causes')
        ~ " where event_date = date'" ~ event_date ~ "' and source_system = " ~ sql_string(source_system)
    ) -%}
    {%- set found = adapter.explain_change(rows, from_version, to_version, measure) -%}
    {%- if found.get('error') -%}
        {{ exceptions.raise_compiler_error('explain_change: ' ~ event_date ~ ' ' ~ source_system ~ ': ' ~ found['error']) }}
    {%- endif -%}
    {{ log(found['text'], info=true) }}
    {{ return(found['text']) }}
{% endmacro %}
