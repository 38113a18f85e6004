{#- Settings of the lateness alerts: the `lateness_alerts` var holds, per
    alert, its severity and thresholds, and under `sources` any source's own
    thresholds. -#}

{#- One setting of an alert, for one source (none: the alert's default). -#}
{% macro lateness_alert_setting(alert, key, source_system=none) -%}
    {%- set settings = var('lateness_alerts', {}).get(alert) -%}
    {%- if settings is none -%}
        {{ exceptions.raise_compiler_error("var lateness_alerts has no alert '" ~ alert ~ "'; alerts are "
            ~ var('lateness_alerts', {}).keys() | list | join(', ')) }}
    {%- endif -%}
    {%- set own = (settings.get('sources') or {}).get(source_system, {}) if source_system else {} -%}
    {%- set value = own.get(key, settings.get(key)) -%}
    {%- if value is none -%}
        {{ exceptions.raise_compiler_error("var lateness_alerts." ~ alert ~ " has no setting '" ~ key ~ "'") }}
    {%- endif -%}
    {%- if key == 'severity' and value | lower not in ('warn', 'error') -%}
        {{ exceptions.raise_compiler_error("var lateness_alerts." ~ alert ~ ".severity is warn or error, got '" ~ value ~ "'") }}
    {%- endif -%}
    {{ return(value) }}
{%- endmacro %}

{#- SQL: a numeric setting of an alert for the row's source (`source_column`),
    a CASE when some sources have their own. -#}
{% macro alert_setting_sql(alert, key, source_column='source_system') -%}
    {%- set by_source = {} -%}
    {%- for source_system, own in (var('lateness_alerts')[alert].get('sources') or {}).items() if key in own -%}
        {%- do by_source.update({source_system: alert_number(alert, key, own[key])}) -%}
    {%- endfor -%}
    {{ return(latecomer__source_case(source_column, by_source, alert_number(alert, key, lateness_alert_setting(alert, key)))) }}
{%- endmacro %}

{% macro alert_number(alert, key, value) -%}
    {%- if value is not number -%}
        {{ exceptions.raise_compiler_error("var lateness_alerts." ~ alert ~ "." ~ key ~ " must be a number, got '" ~ value ~ "'") }}
    {%- endif -%}
    {{ return(value) }}
{%- endmacro %}
