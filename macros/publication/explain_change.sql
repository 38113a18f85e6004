{#- "Why did this number change?" for one row of a restated revenue model:
    dbt run-operation explain_change --args '{event_date: 2024-01-15, source_system: web, from_version: 1, to_version: 3}'
    prints the change of `measure` (net_revenue; or orders, gross_revenue,
    refunds) between the two versions, broken down by cause, from the
    model's causes model (python_jobs/core/explain.py). `model` defaults to
    gold_daily_revenue; a row of another one is given by its own key:
    {model: gold_hourly_revenue, event_date: ..., event_hour: 13, source_system: web},
    {model: gold_revenue_by_tier, event_date: ..., tier: gold, region: emea},
    {model: gold_weekly_revenue, week_start_date: ..., source_system: web}
    (month_start_date, quarter_start_date, year_start_date for the monthly,
    quarterly and ytd rollups). Versions default to the latest and the one
    before it. Returns the sentence. -#}
{% macro explain_change(model='gold_daily_revenue', from_version=none, to_version=none, measure='net_revenue') %}
    {%- for name, value in [('from_version', from_version), ('to_version', to_version)] -%}
        {%- if value is not none and not modules.re.match('^[0-9]+$', value | string) -%}
            {{ exceptions.raise_compiler_error("explain_change: " ~ name ~ " must be a row version (a whole number), got '" ~ value ~ "'") }}
        {%- endif -%}
    {%- endfor -%}
    {%- set request = adapter.explain_row(model, kwargs) -%}
    {%- if request.get('error') -%}
        {{ exceptions.raise_compiler_error('explain_change: ' ~ request['error']) }}
    {%- endif -%}
    {%- set rows = run_query('select * from ' ~ ref(request['causes']) ~ ' where ' ~ request['predicate']) -%}
    {%- set found = adapter.explain_change(rows, from_version, to_version, measure, request['label']) -%}
    {%- if found.get('error') -%}
        {{ exceptions.raise_compiler_error('explain_change: ' ~ request['label'] ~ ': ' ~ found['error']) }}
    {%- endif -%}
    {{ log(found['text'], info=true) }}
    {{ return(found['text']) }}
{% endmacro %}
