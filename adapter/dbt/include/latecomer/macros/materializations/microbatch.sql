{#- The microbatch strategy: a batch replaces exactly the rows of its
    event-time range, [start, end), with the batch's rows, in one MERGE (one
    commit): every batch row is inserted (`on false`: nothing matches), and
    every target row in the range that is not a batch row is deleted (`when
    not matched by source`). A batch with no rows deletes its range's rows,
    which dbt-spark's dynamic `insert overwrite` leaves in place (it only
    overwrites partitions the batch writes to). The range is compared the
    way dbt filters the model's refs for the batch (`event_time >= 'start'
    and event_time < 'end'`), so the rows replaced are the rows the batch
    reads. No partition_by or unique_key is needed; incremental_predicates,
    if any, narrow the rows deleted. -#}
{% macro latecomer_microbatch_sql(source, target, incremental_predicates=none) -%}
    {%- set event_time = config.get('event_time') -%}
    {%- set start = config.get('__dbt_internal_microbatch_event_time_start') -%}
    {%- set end = config.get('__dbt_internal_microbatch_event_time_end') -%}
    {%- set in_batch = [] -%}
    {%- if start is not none -%}
        {%- do in_batch.append('DBT_INTERNAL_DEST.' ~ event_time ~ " >= '" ~ start ~ "'") -%}
    {%- endif -%}
    {%- if end is not none -%}
        {%- do in_batch.append('DBT_INTERNAL_DEST.' ~ event_time ~ " < '" ~ end ~ "'") -%}
    {%- endif -%}
    {%- do in_batch.extend(incremental_predicates or []) -%}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on false
    when not matched then insert *
    when not matched by source{% if in_batch %} and {{ in_batch | join(' and ') }}{% endif %} then delete
{%- endmacro %}


{#- The microbatch strategy needs a table format that runs MERGE, and an
    event_time column on the model itself (the range it replaces). -#}
{% macro latecomer_validate_microbatch(file_format) -%}
    {%- if file_format not in ['delta', 'iceberg', 'hudi'] -%}
        {{ exceptions.raise_compiler_error(
            "The microbatch strategy replaces each batch's event-time range with a MERGE, which needs "
            ~ "file_format delta or iceberg (the target's table_format by default), not " ~ file_format ~ ".") }}
    {%- endif -%}
    {%- if not config.get('event_time') -%}
        {{ exceptions.raise_compiler_error("The microbatch strategy needs an event_time config on the model.") }}
    {%- endif -%}
{%- endmacro %}
