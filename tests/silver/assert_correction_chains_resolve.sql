{#- Every correction chain ends at an event that corrects nothing:
    silver_events follows chains of up to 64 links
    (macros/silver/corrections.sql). A longer chain, or a cycle (two
    corrections naming each other), would count its tail as an event of its
    own: each such alias is a failing row, with the id its chain stopped at.
    The link index holds only corrections that name another id, so this
    reads a small table. -#}
with links as (
    {{ correction_links(ref('silver_correction_links'), links_index=true) }}
),

{{ correction_chain_end_ctes('links', 'chains') }}

select
    chains_end.source_system,
    chains_end.alias_event_id,
    chains_end.next_event_id as stopped_at,
    chains_end.links_followed_at_most
from chains_ends as chains_end
inner join links as unresolved
    on chains_end.source_system = unresolved.source_system
    and chains_end.next_event_id = unresolved.alias_event_id
