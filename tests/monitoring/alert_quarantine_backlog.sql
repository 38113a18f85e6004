{#- Alert: Rows of a source have stayed quarantined longer than max_age_hours
    since first seen. Severity and thresholds: var
    lateness_alerts.quarantine_backlog. -#}
{{ config(severity=lateness_alert_setting('quarantine_backlog', 'severity')) }}

select * from {{ ref('lateness_alerts') }}
where alert = 'quarantine_backlog'
