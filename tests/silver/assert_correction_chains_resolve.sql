{#- Every correction chain ends at an event that corrects nothing:
    silver_correction_chains follows chains of up to 64 links
    (macros/silver/corrections.sql). A longer chain, or a cycle (two
    corrections naming each other), would count its tail as an event of its
    own: each such alias is a failing row, with the id its chain stopped at. -#}
select
    source_system,
    alias_event_id,
    chain_end_event_id as stopped_at,
    links_followed_at_most
from {{ ref('silver_correction_chains') }}
where not is_resolved
