{#- Where each correction chain ends: one row per correction id that names
    another id (an alias in silver_correction_links), with the id its chain
    of corrections ends at, followed through up to 64 links
    (correction_chain_end_ctes). silver_events resolves a batch's corrections
    with one join to this table instead of following every chain again, and
    assert_correction_chains_resolve reads its unresolved rows. Rebuilt whole
    (materialized='recomputed') only in a build whose link index moved; such
    a build follows the links a round at a time and stops once no chain
    moves (spilled_from), where a unit test follows all six rounds in one
    query over its fixture. -#}
{{ config(materialized='recomputed', as_of_dependent=false) }}

{%- set links_sql = correction_links(ref('silver_correction_links'), links_index=true) %}

with links as (
    {{ links_sql }}
),

{{ correction_chain_end_ctes('links', 'chains', spilled_from=links_sql if latecomer__recomputed_rebuilds() and latecomer__spills_while_rendering() else none) }},

final as (
    select
        chains_ends.source_system,
        chains_ends.alias_event_id,
        chains_ends.next_event_id as chain_end_event_id,
        unresolved.alias_event_id is null as is_resolved,
        chains_ends.links_followed_at_most
    from chains_ends
    left join links as unresolved
        on chains_ends.source_system = unresolved.source_system
        and chains_ends.next_event_id = unresolved.alias_event_id
)

select * from final
