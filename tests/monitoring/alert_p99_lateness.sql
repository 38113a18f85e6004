{#- Alert: An arrival day's p99 lateness is above factor times the mean p99 of
    the source's baseline_days arrival days before it. Severity and thresholds:
    var lateness_alerts.p99_lateness. -#}
{{ config(severity=lateness_alert_setting('p99_lateness', 'severity')) }}

select * from {{ ref('lateness_alerts') }}
where alert = 'p99_lateness'
