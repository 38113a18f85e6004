{#- The periods each run restated, from the change manifest: one row per run,
    model and period with at least one published row whose values changed.
    The same figures as the run's target/restatement_digest.md, kept for every
    run (python_jobs/core/digest.py writes those). -#}
{{ config(materialized='view') }}

with manifest as (
    select * from {{ source('audit_logs', 'gold_change_manifest') }}
    where change in ('restated', 'published')
),

periods as (
    select
        invocation_id,
        as_of,
        model,
        partition_value as period,
        count(*) as rows_written,
        count_if(change = 'restated') as rows_restated,
        coalesce(sum(cast(get_json_object(before_values, '$.net_revenue') as decimal(38, 2))), 0)
            as net_revenue_before,
        coalesce(sum(cast(get_json_object(after_values, '$.net_revenue') as decimal(38, 2))), 0)
            as net_revenue_after,
        array_sort(collect_set(coalesce(restatement_reason, 'new rows'))) as causes
    from manifest
    group by invocation_id, as_of, model, partition_value
)

select
    invocation_id,
    as_of,
    model,
    period,
    rows_written,
    rows_restated,
    net_revenue_before,
    net_revenue_after,
    net_revenue_after - net_revenue_before as net_revenue_delta,
    causes
from periods
where rows_restated > 0
