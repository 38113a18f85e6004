{#- Alert: A source has sent nothing for max_silence_hours (flow_stopped), or
    its last window_days brought fewer than min_ratio times the events of the
    windows before (volume_drop). Severity and thresholds: var
    lateness_alerts.flow_interruption. -#}
{{ config(severity=lateness_alert_setting('flow_interruption', 'severity')) }}

select * from {{ ref('lateness_alerts') }}
where alert in ('flow_stopped', 'volume_drop')
