{#- Revenue per month (starting date) and source, rolled up from gold_daily_revenue. -#}
{{ config(
    materialized='restated',
    unique_key=['month_start_date', 'source_system'],
    restated_partition='month_start_date',
    meta={'test_scope': {'partition': 'month_start_date', 'run_column': 'changed_run_at'}},
) }}

{{ revenue_rollup('month') }}
