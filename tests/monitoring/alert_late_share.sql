{#- Alert: A source's share of events later than a watermark tier, over the last
    window_hours, is above the tier's alert_share (its own, under
    source_watermarks). Severity and thresholds: var lateness_alerts.late_share. -#}
{{ config(severity=lateness_alert_setting('late_share', 'severity')) }}

select * from {{ ref('lateness_alerts') }}
where alert = 'late_share'
