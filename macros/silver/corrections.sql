{#- Correction chains. A correction may name a superseded correction rather
    than the original event; correction_links maps each correcting event id to
    the id it corrects, and correction_chain_end_ctes follows such links, to
    any depth up to 64 links, to the original event's id (the model
    silver_correction_chains keeps them; resolved_through_chains adds them to
    candidate rows as resolved_event_id). `arrivals` is ledger-shaped, or
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

{#- CTEs ending in {name}_ends: each alias of `links` with the id its chain
    ends at (next_event_id) and the most links a chain may have to resolve
    (links_followed_at_most, 64). Pointer jumping: round k maps each alias
    2 ** k links ahead (or to the chain's end) by following its own map
    twice, so six self-joins of the small link set resolve chains of up to 64
    links. A longer chain, or a cycle, ends at a correction: the test
    assert_correction_chains_resolve names it. -#}
{% macro correction_chain_end_ctes(links, name) -%}
{%- set rounds = 6 -%}
{{ name }}_ends_0 as (
    select source_system, alias_event_id, next_event_id from {{ links }}
),
{%- for round in range(1, rounds + 1) %}

{{ name }}_ends_{{ round }} as (
    select
        hop.source_system,
        hop.alias_event_id,
        coalesce(further.next_event_id, hop.next_event_id) as next_event_id
    from {{ name }}_ends_{{ round - 1 }} as hop
    left join {{ name }}_ends_{{ round - 1 }} as further
        on hop.source_system = further.source_system
        and hop.next_event_id = further.alias_event_id
),
{%- endfor %}

{{ name }}_ends as (
    select
        *,
        {{ 2 ** rounds }} as links_followed_at_most
    from {{ name }}_ends_{{ rounds }}
)
{%- endmacro %}

{#- CTEs ending in `name`: the rows of `candidates` with resolved_event_id,
    their target_event_id followed through `links` to the chain's end (the
    backfill path, over links read again from bronze). -#}
{% macro resolve_corrections_ctes(candidates, links, name) -%}
{{ correction_chain_end_ctes(links, name) }},

{{ name }} as (
    {{ resolved_through_chains(candidates, name ~ '_ends', 'next_event_id') }}
)
{%- endmacro %}

{#- SQL: the rows of `candidates` with resolved_event_id, their
    target_event_id replaced by the end of its chain where `ends` (source_system,
    alias_event_id and the chain's end in column `end_column`) has one. -#}
{% macro resolved_through_chains(candidates, ends, end_column) -%}
    select
        {{ candidates }}.*,
        coalesce(chain_end.{{ end_column }}, {{ candidates }}.target_event_id) as resolved_event_id
    from {{ candidates }}
    left join {{ ends }} as chain_end
        on {{ candidates }}.source_system = chain_end.source_system
        and {{ candidates }}.target_event_id = chain_end.alias_event_id
{%- endmacro %}
