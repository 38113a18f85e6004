{#- Year-to-date revenue per year (starting date) and source, rolled up from
    gold_daily_revenue: the open year holds its days so far. -#}
{{ config(
    materialized='restated',
    unique_key=['year_start_date', 'source_system'],
    restated_partition='year_start_date',
    meta={'test_scope': {'partition': 'year_start_date', 'run_column': 'changed_run_at'}},
) }}

{{ revenue_rollup('year') }}
