{#- Alert: partitions the publication gate holds, left as published in every
    gold model that restates them until their figures return to normal or a
    steward decides (python -m python_jobs.landing.steward holds). Severity:
    var lateness_alerts.publication_holds. -#}
{{ config(severity=lateness_alert_setting('publication_holds', 'severity')) }}

select
    hold_id,
    partition_value,
    group_values,
    checks_fired,
    breaches,
    first_held_at,
    last_judged_at
from {{ ref('publication_holds') }}
where state = 'open'
