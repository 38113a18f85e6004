{#- How a small event-time table is laid out in files: one partition per
    month of `column`, not per day.

    A gold or monitoring table holds a few rows per day (dates x sources), so
    a partition per day is a few hundred bytes in a file of its own: every
    scan of the table opens one file per day of history (62 files for 123 rows
    at 60 days), and the cost of a scan grows with history though its rows do
    not. Month partitions keep pruning by date (Iceberg's months() transform
    prunes `event_date = ...` and `event_date in (...)`), and a restatement
    still writes only the rows it touches; the files it rewrites are the
    touched months', a few kilobytes. Delta partitions by plain columns only:
    there the day column stays the partition. Used in config(partition_by=...),
    rendered when the project is parsed. -#}
{% macro latecomer__month_partitions(column) -%}
    {%- if latecomer__versions_table_format() == 'delta' -%}
        {{ return([column]) }}
    {%- endif -%}
    {{ return(['months(' ~ column ~ ')']) }}
{%- endmacro %}


{#- The column a partition_by entry partitions on: `event_date` for both
    `event_date` and a transform of it (`months(event_date)`,
    `bucket(16, event_date)`). -#}
{% macro latecomer__partition_column(entry) -%}
    {%- set transform = modules.re.match('^\\s*\\w+\\s*\\((?:\\s*\\d+\\s*,)?\\s*(\\w+)\\s*\\)\\s*$', entry) -%}
    {{ return(transform.group(1) if transform else entry | trim) }}
{%- endmacro %}
