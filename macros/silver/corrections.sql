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
    assert_correction_chains_resolve names it.

    In one query Spark inlines each round's two references to the round
    before, so the plan reads the link set 64 times. With spilled_from (the
    links' SQL, in a build), the rounds run one query each instead, over the
    round before's spilled rows (spilled_chain_end_rounds), and stop at the
    first round in which no chain moved: real chains are one or two links. -#}
{% macro correction_chain_end_ctes(links, name, spilled_from=none) -%}
{%- set rounds = 6 -%}
{%- if spilled_from is not none and execute %}
    {%- set last_round = spilled_chain_end_rounds(spilled_from, name, rounds) %}
{%- else %}
    {%- set last_round = name ~ '_ends_' ~ rounds %}
{{ name }}_ends_0 as (
    select source_system, alias_event_id, next_event_id from {{ links }}
),
{%- for round in range(1, rounds + 1) %}

{{ name }}_ends_{{ round }} as (
    {{ chain_end_round(name ~ '_ends_' ~ (round - 1)) }}
),
{%- endfor %}
{%- endif %}

{{ name }}_ends as (
    select
        source_system,
        alias_event_id,
        next_event_id,
        {{ 2 ** rounds }} as links_followed_at_most
    from {{ last_round }}
)
{%- endmacro %}

{#- SQL: one pointer-jumping round over `ends` (source_system, alias_event_id,
    next_event_id): each alias's end followed once more through the map
    itself, and whether it moved. -#}
{% macro chain_end_round(ends) -%}
    select
        hop.source_system,
        hop.alias_event_id,
        coalesce(further.next_event_id, hop.next_event_id) as next_event_id,
        further.alias_event_id is not null as moved
    from {{ ends }} as hop
    left join {{ ends }} as further
        on hop.source_system = further.source_system
        and hop.next_event_id = further.alias_event_id
{%- endmacro %}

{#- The spilled view of the chain ends after pointer jumping over the links of
    `links_sql`: up to `rounds` rounds, one statement each (latecomer__spill_rows), and
    none after the first in which no alias moved (their ends are then final:
    no end is itself an alias). -#}
{% macro spilled_chain_end_rounds(links_sql, name, rounds) %}
    {%- set prefix = (this.identifier ~ '__' if this is not none else '') ~ name ~ '_round_' -%}
    {%- set spilled = namespace(view=latecomer__spill_rows(none, sql=links_sql, view=prefix ~ 0), rounds=0, settled=false) -%}
    {%- for round in range(1, rounds + 1) if not spilled.settled -%}
        {%- set spilled.view = latecomer__spill_rows(none, sql=chain_end_round(spilled.view), view=prefix ~ round) -%}
        {%- set spilled.rounds = round -%}
        {%- set spilled.settled = run_query('select 1 from ' ~ spilled.view ~ ' where moved limit 1').rows | length == 0 -%}
    {%- endfor -%}
    {{ log(prefix ~ ': correction chains followed in ' ~ spilled.rounds ~ ' round(s), settled: ' ~ spilled.settled) }}
    {{ return(spilled.view) }}
{% endmacro %}

{#- CTEs ending in `name`: the rows of `candidates` with resolved_event_id,
    their target_event_id followed through `links` to the chain's end (the
    backfill path, over links read again from bronze; spilled_from as in
    correction_chain_end_ctes). -#}
{% macro resolve_corrections_ctes(candidates, links, name, spilled_from=none) -%}
{{ correction_chain_end_ctes(links, name, spilled_from=spilled_from) }},

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

{#- SQL: why a correction record was sent, from the fields the source may
    give with it (correction_reason, corrected_by, corrected_field, read from
    its raw payload), as one text: "restated total, by finance-ops, field
    amount"; null when it gives none. -#}
{% macro correction_reason(raw_payload) -%}
    nullif(concat_ws(
        ', ',
        get_json_object({{ raw_payload }}, '$.correction_reason'),
        concat('by ', get_json_object({{ raw_payload }}, '$.corrected_by')),
        concat('field ', get_json_object({{ raw_payload }}, '$.corrected_field'))
    ), '')
{%- endmacro %}
