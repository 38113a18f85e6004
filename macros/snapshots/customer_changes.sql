{#- SQL: the rows of the bronze customer change table, or no rows with its
    columns while it does not exist. The ingest job creates the table on the
    first customers landing, so a deployment that has landed only events still
    builds (with every customer unknown). -#}
{% macro bronze_customer_changes_or_empty(relation) -%}
    {%- if not execute or load_relation(relation) is not none -%}
        select * from {{ relation }}
    {%- else -%}
        {{ log(relation ~ " does not exist yet (no customers file landed): reading no customer changes", info=true) }}
        select
            cast(null as string) as bronze_row_id,
            cast(null as string) as ingestion_id,
            cast(null as string) as source_system,
            cast(null as string) as source_file,
            cast(null as int) as line_number,
            cast(null as timestamp) as arrival_ts,
            cast(null as date) as arrival_date,
            cast(null as timestamp) as ingested_at,
            cast(null as string) as customer_id,
            cast(null as string) as tier,
            cast(null as string) as region,
            cast(null as string) as updated_at_raw,
            cast(null as timestamp) as updated_at,
            cast(null as boolean) as is_deleted,
            cast(null as string) as parse_error,
            cast(null as string) as raw_payload
        where false
    {%- endif -%}
{%- endmacro %}

{#- SQL: the customer dimension member an event is counted under: the
    version's value, or 'unknown' when no version of the customer was valid at
    the event's time (or the version has no value). -#}
{% macro customer_member(column) -%}
    coalesce({{ column }}, 'unknown')
{%- endmacro %}

{#- SQL join condition: `version` (customer_history rows) is the customer
    version believed, at time `at`, to be valid for `user_id` at `event_ts`:
    recorded by then and not yet superseded (`strict`: just before `at`, so
    a version recorded at `at` is not yet believed and one superseded at `at`
    still is). -#}
{% macro believed_at(version, user_id, event_ts, at, strict=false) -%}
    {{ user_id }} = {{ version }}.customer_id
    and {{ event_ts }} >= {{ version }}.valid_from
    and ({{ version }}.valid_to is null or {{ event_ts }} < {{ version }}.valid_to)
    and {{ version }}.recorded_run_at {{ '<' if strict else '<=' }} {{ at }}
    and ({{ version }}.superseded_run_at is null or {{ version }}.superseded_run_at {{ '>=' if strict else '>' }} {{ at }})
{%- endmacro %}
