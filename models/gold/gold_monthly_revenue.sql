{#- Revenue per month (starting date) and source, rolled up from gold_daily_revenue. -#}
{{ config(
    materialized='restated',
    unique_key=['month_start_date', 'source_system'],
    publication_gate={'measure': 'net_revenue', 'partition': 'month_start_date'},
) }}

{{ revenue_rollup('month') }}
