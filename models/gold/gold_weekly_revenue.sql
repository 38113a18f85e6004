{#- Revenue per week (starting date) and source, rolled up from gold_daily_revenue. -#}
{{ config(unique_key=['week_start_date', 'source_system']) }}

{{ revenue_rollup('week') }}
