{#- No correction on a chain that does not resolve reached silver: such a
    chain (longer than silver_correction_chains follows, or a cycle of
    corrections naming each other) would merge its tail under whatever id it
    stopped at. silver_quarantine holds its arrivals instead
    (unresolved_correction_chain) and the build goes on; each failing row is
    a silver row whose winning arrival is one of them. A chain that became
    unresolved after its first links were merged shows here until a replay
    of its dates takes them out. -#}
select
    silver_events.event_id,
    silver_events.source_system,
    silver_events.bronze_row_id,
    quarantine.quarantine_reason
from {{ ref('silver_events') }} as silver_events
inner join {{ ref('silver_quarantine') }} as quarantine
    on silver_events.bronze_row_id = quarantine.bronze_row_id
where
    quarantine.quarantine_reason = 'unresolved_correction_chain'
    and quarantine.status != 'released'
