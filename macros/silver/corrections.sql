{#- Correction chains. A correction may name a superseded correction rather
    than the original event; correction_links maps each correcting event id to
    the id it corrects, and resolve_corrections follows up to three such hops
    (correction-of-a-correction chains) to the original event's id, added to
    every candidate row as resolved_event_id. `arrivals` is ledger-shaped, or
    with links_index the silver_correction_links index. -#}
{% macro correction_links(arrivals, links_index=false) -%}
    select
        source_system,
        {%- if links_index %}
        alias_event_id,
        max(next_event_id) as next_event_id
    from {{ arrivals }}
    group by source_system, alias_event_id
        {%- else %}
        event_id as alias_event_id,
        max(target_event_id) as next_event_id
    from {{ arrivals }}
    where record_kind = 'correction' and event_id is not null and event_id != target_event_id
    group by source_system, event_id
        {%- endif %}
{%- endmacro %}

{% macro resolve_corrections(candidates, links) -%}
    select
        {{ candidates }}.*,
        coalesce(hop3.next_event_id, hop2.next_event_id, hop1.next_event_id, {{ candidates }}.target_event_id)
            as resolved_event_id
    from {{ candidates }}
    left join {{ links }} as hop1
        on {{ candidates }}.source_system = hop1.source_system
        and {{ candidates }}.target_event_id = hop1.alias_event_id
    left join {{ links }} as hop2
        on hop1.source_system = hop2.source_system
        and hop1.next_event_id = hop2.alias_event_id
    left join {{ links }} as hop3
        on hop2.source_system = hop3.source_system
        and hop2.next_event_id = hop3.alias_event_id
{%- endmacro %}
