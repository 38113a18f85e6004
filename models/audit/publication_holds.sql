{#- Every publication hold and its state: one row per hold, from the hold log
    that the judge (gold_daily_revenue) appends to and the stewards'
    decisions. Open holds are partitions left as published in every model
    that restates them; the steward lists and decides them with
    `python -m python_jobs.landing.steward holds`. Runs after the judge, and
    the models that follow its holds read it (adapter/dbt/include/latecomer/macros/publication/holds.sql). -#}
{{ config(materialized='view') }}
-- depends_on: {{ ref('gold_daily_revenue') }}

with holds as (
    {{ latecomer__hold_state_sql(source('audit_logs', 'publication_hold_log'), source('bronze', 'hold_decisions')) }}
)

select * from holds
