{#- Latest decision per quarantined row (a later decision overrides an earlier one). -#}
with steward_decisions as (
    select * from {{ source('bronze', 'steward_decisions') }}
),

ranked as (
    select
        *,
        row_number() over (partition by bronze_row_id order by decided_at desc, decision_id desc) as decision_rank
    from steward_decisions
)

select
    decision_id,
    bronze_row_id,
    decision,
    reason,
    actor,
    decided_at
from ranked
where decision_rank = 1
