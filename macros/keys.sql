{#- Surrogate natural key for sources without event_id: 'sk_' + SHA-256 of
    source, event type, user, UTC event time (microseconds) and amount. The same
    event re-sent by such a source gets the same key, so it deduplicates. -#}
{% macro surrogate_event_key(source_system, event_type, user_id, event_ts, amount) -%}
    concat('sk_', sha2(concat_ws('|',
        {{ source_system }},
        {{ event_type }},
        {{ user_id }},
        date_format({{ event_ts }}, 'yyyy-MM-dd HH:mm:ss.SSSSSS'),
        coalesce(cast({{ amount }} as string), '')
    ), 256))
{%- endmacro %}
